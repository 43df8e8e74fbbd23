"""Slicing: numpy's basic indexing (steps, negative and clamped bounds, None, '...'),
npx.slice and slice_axis, gradients, slices of computed values in hybridized blocks, MXNet
1.x's F.slice / F.slice_axis, errors, and MXNet 1.9.1's own slice with the same input
(when bench/.venv has it)."""
import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from test_mxnet_parity import needs_mxnet, run_in_mxnet

RNG = onp.random.RandomState(21)
X = RNG.uniform(-1, 1, (4, 5, 6)).astype(onp.float32)

KEYS = [
    (slice(1, 3),),
    (slice(None, None, 2), 1),
    (Ellipsis, slice(None, None, -1)),
    (slice(-1, None, -2), slice(-99, 99, 3), slice(-2, -6, -1)),
    (None, 2, Ellipsis, None),
    (slice(3, 1),),
    (1, slice(None), slice(1, -1)),
    (-1, -2, -3),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_basic_indexing_is_numpys(key):
    onp.testing.assert_array_equal(np.array(X)[key].asnumpy(), X[key])


def test_npx_slice_and_slice_axis():
    x = np.array(X)
    got = npx.slice(x, begin=(None, 1, -1), end=(None, None, None), step=(None, 2, -2))
    onp.testing.assert_array_equal(got.asnumpy(), X[:, 1::2, -1::-2])
    onp.testing.assert_array_equal(npx.slice(x, (1,), (3,)).asnumpy(), X[1:3])
    onp.testing.assert_array_equal(npx.slice_axis(x, axis=-1, begin=2, end=None).asnumpy(),
                                   X[..., 2:])
    onp.testing.assert_array_equal(npx.slice_axis(x, axis=1, begin=-3, end=-1).asnumpy(),
                                   X[:, -3:-1])


def test_gradient_lands_where_the_slice_read():
    weights = RNG.uniform(-1, 1, (2, 2, 3)).astype(onp.float32)
    x = np.array(X)
    x.attach_grad()
    with autograd.record():
        loss = (x[::2, 1::2, ::-2] * np.array(weights)).sum()
    loss.backward()
    want = onp.zeros_like(X)
    want[::2, 1::2, ::-2] = weights
    onp.testing.assert_array_equal(x.grad.asnumpy(), want)


class Slicer(gluon.HybridBlock):
    """Slices of a value computed inside the forward, one way per line."""

    def forward(self, x):
        y = x * 2
        return y[1:, 1::2, -1::-3] + y[:3, 1::2, :2] * y[0, None, :2, ::-3]


@pytest.mark.parametrize("hybridize", [False, True])
def test_slices_of_computed_values_hybridize_and_train(hybridize):
    block = Slicer()
    block.hybridize(hybridize)
    x = np.array(X)
    x.attach_grad()
    with autograd.record():
        y = block(x)
        y.sum().backward()
    z = 2 * X
    want = z[1:, 1::2, -1::-3] + z[:3, 1::2, :2] * z[0, None, :2, ::-3]
    onp.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    # The gradient against the eager block's.
    eager = np.array(X)
    eager.attach_grad()
    with autograd.record():
        Slicer()(eager).sum().backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), eager.grad.asnumpy(), rtol=1e-6, atol=1e-6)


def test_mxnet1_slice_ops_and_errors():
    class Legacy(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.slice(x, begin=(0, None, 4), end=(2, None, 0), step=(1, 2, -2)) + \
                F.slice_axis(x, axis=0, begin=-2, end=None)[:, ::2, 4:0:-2]

    block = Legacy()
    block.hybridize()
    onp.testing.assert_array_equal(block(np.array(X)).asnumpy(),
                                   X[0:2, ::2, 4:0:-2] + X[-2:, ::2, 4:0:-2])
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        np.array(X)[::0]
    with pytest.raises(IndexError, match="too many indices"):
        np.array(X)[0, 0, 0, 0]
    with pytest.raises(IndexError, match="use np.take"):
        np.array(X)[[0, 1]]
    with pytest.raises(ValueError, match="one entry per sliced axis"):
        npx.slice(np.array(X), (0, 1), (2,))


MXNET_SCRIPT = """
import sys
import mxnet as mx, numpy as onp
args = onp.load(sys.argv[1])
x = mx.nd.array(args["x"])
x.attach_grad()
with mx.autograd.record():
    y = mx.nd.slice(x, begin=(None, 1, -1), end=(None, None, None), step=(None, 2, -2))
    z = mx.nd.slice_axis(x, axis=2, begin=1, end=-1)
    loss = (y * mx.nd.array(args["w"])).sum() + z.sum()
loss.backward()
onp.savez(sys.argv[2], y=y.asnumpy(), z=z.asnumpy(), grad=x.grad.asnumpy())
"""


@needs_mxnet
def test_slices_agree_with_mxnet(tmp_path):
    w = RNG.uniform(-1, 1, (4, 2, 3)).astype(onp.float32)
    onp.savez(tmp_path / "in.npz", x=X, w=w)
    run_in_mxnet(MXNET_SCRIPT, tmp_path / "in.npz", tmp_path / "out.npz")
    want = onp.load(tmp_path / "out.npz")
    x = np.array(X)
    x.attach_grad()
    with autograd.record():
        y = npx.slice(x, begin=(None, 1, -1), end=(None, None, None), step=(None, 2, -2))
        z = npx.slice_axis(x, axis=2, begin=1, end=-1)
        loss = (y * np.array(w)).sum() + z.sum()
    loss.backward()
    onp.testing.assert_array_equal(y.asnumpy(), want["y"])
    onp.testing.assert_array_equal(z.asnumpy(), want["z"])
    onp.testing.assert_allclose(x.grad.asnumpy(), want["grad"], rtol=1e-6)
