"""nn.Conv2DTranspose and npx.deconvolution: against a numpy scatter, eager against
hybridized with gradients, MXNet 1.x's F.Deconvolution, and MXNet 1.9.1's own layer
(when bench/.venv has it) with the same weights."""
import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from dlc.gluon import nn
from test_mxnet_parity import needs_mxnet, run_in_mxnet


def scatter(x, w, b, stride, pad, adj, dilate, groups):
    """Each input element adds its weight window into the output."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    oh = (h - 1) * stride[0] - 2 * pad[0] + dilate[0] * (kh - 1) + adj[0] + 1
    ow = (wd - 1) * stride[1] - 2 * pad[1] + dilate[1] * (kw - 1) + adj[1] + 1
    # Scatter into a padded canvas, then crop the padding.
    canvas = onp.zeros((n, og * groups, oh + 2 * pad[0] + kh * dilate[0],
                        ow + 2 * pad[1] + kw * dilate[1]))
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilate[0], i * dilate[0] + (h - 1) * stride[0] + 1, stride[0])
                cols = slice(j * dilate[1], j * dilate[1] + (wd - 1) * stride[1] + 1, stride[1])
                canvas[:, g * og:(g + 1) * og, rows, cols] += (
                    x[:, ci, None, :, :] * w[ci, :, i, j][None, :, None, None])
    out = canvas[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]
    return out + b[None, :, None, None]


CASES = [  # x shape, channels, kernel, stride, pad, adj, dilate, groups
    ((2, 3, 4, 5), 4, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((2, 4, 5, 3), 6, (4, 4), (2, 2), (1, 1), (1, 0), (1, 1), 2),
    ((1, 2, 3, 4), 3, (3, 2), (3, 2), (1, 0), (2, 1), (2, 1), 1),
]


@pytest.mark.parametrize("shape, channels, kernel, stride, pad, adj, dilate, groups", CASES)
def test_layer_is_the_scatter_eagerly_and_hybridized(shape, channels, kernel, stride, pad, adj,
                                                     dilate, groups):
    rng = onp.random.RandomState(5)
    x = rng.uniform(-1, 1, shape).astype(onp.float32)
    layer = nn.Conv2DTranspose(channels, kernel, strides=stride, padding=pad,
                               output_padding=adj, dilation=dilate, groups=groups,
                               bias_initializer="normal")
    layer.initialize()
    results = []
    for hybridize in (False, True):  # the same weights, eager then compiled
        data = np.array(x)
        data.attach_grad()
        layer.hybridize(hybridize)
        with autograd.record():
            y = layer(data)
            loss = (y * y).sum()
        loss.backward()
        w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
        assert w.shape == (shape[1], channels // groups) + kernel
        want = scatter(x.astype(onp.float64), w, b, stride, pad, adj, dilate, groups)
        onp.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-5)
        results.append([data.grad.asnumpy(), layer.weight.grad().asnumpy(),
                        layer.bias.grad().asnumpy()])
    for eager, compiled in zip(*results):
        assert onp.abs(eager).max() > 0
        onp.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-5)


def test_mxnet1_deconvolution_and_errors():
    rng = onp.random.RandomState(2)
    x = rng.uniform(-1, 1, (1, 2, 3, 3)).astype(onp.float32)
    w = rng.uniform(-1, 1, (2, 3, 2, 2)).astype(onp.float32)

    class Legacy(gluon.HybridBlock):
        def hybrid_forward(self, F, x, w):
            return F.Deconvolution(x, w, kernel=(2, 2), stride=(2, 2), num_filter=3, no_bias=True)

    y = Legacy()(np.array(x), np.array(w)).asnumpy()
    onp.testing.assert_allclose(y, scatter(x, w, onp.zeros(3), (2, 2), (0, 0), (0, 0), (1, 1), 1),
                                rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="output_padding"):
        nn.Conv2DTranspose(4, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="adj"):
        npx.deconvolution(np.array(x), np.array(w), adj=(1, 2, 3))


MXNET_SCRIPT = """
import sys
import mxnet as mx, numpy as onp
from mxnet.gluon import nn
rng = onp.random.RandomState(4)
x = mx.nd.array(rng.uniform(-1, 1, (2, 4, 5, 5)).astype(onp.float32))
layer = nn.Conv2DTranspose(6, 3, strides=2, padding=1, output_padding=1, groups=2, in_channels=4)
layer.initialize(mx.init.Xavier())
y = layer(x)
onp.savez(sys.argv[1], x=x.asnumpy(), weight=layer.weight.data().asnumpy(),
          bias=rng.uniform(-1, 1, 6).astype(onp.float32), y=y.asnumpy())
"""


@needs_mxnet
def test_layer_agrees_with_mxnet(tmp_path):
    out = tmp_path / "mxnet.npz"
    run_in_mxnet(MXNET_SCRIPT, out)
    ref = onp.load(out)
    layer = nn.Conv2DTranspose(6, 3, strides=2, padding=1, output_padding=1, groups=2,
                               in_channels=4, bias_initializer="zeros")
    layer.initialize()
    layer.weight.set_data(np.array(ref["weight"]))
    onp.testing.assert_allclose(layer(np.array(ref["x"])).asnumpy(), ref["y"], rtol=1e-5,
                                atol=1e-5)
