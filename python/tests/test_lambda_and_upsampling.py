"""nn.HybridLambda and nn.Lambda (a function or an operator's name), padding (npx.pad,
nn.ReflectionPad2D, F.pad) and nearest
up-sampling (nn.UpSampling2D, npx.upsampling, MXNet 1.x's F.UpSampling): eager and
hybridized alike, values as numpy computes them."""
import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from dlc.gluon import nn
from test_mxnet_parity import needs_mxnet, run_in_mxnet


def test_lambdas_run_functions_and_named_operators():
    x = np.array([[-1.0, 0.5], [2.0, -3.0]])
    for hybridize in (False, True):
        net = nn.HybridSequential()
        net.add(nn.HybridLambda(lambda F, v: F.LeakyReLU(v, slope=0.1)), nn.HybridLambda("tanh"))
        if hybridize:
            net.hybridize()
        onp.testing.assert_allclose(net(x).asnumpy(),
                                    onp.tanh(onp.where(x.asnumpy() > 0, x.asnumpy(),
                                                       0.1 * x.asnumpy())), rtol=1e-6)
    assert nn.Lambda(lambda v: v * 2)(x).asnumpy().tolist() == [[-2, 1], [4, -6]]
    assert nn.Lambda("relu")(x).asnumpy().tolist() == [[0, 0.5], [2, 0]]
    with pytest.raises(AttributeError, match="no_such_op"):
        nn.HybridLambda("no_such_op")
    with pytest.raises(ValueError, match="function"):
        nn.Lambda(3)


def test_nearest_upsampling_repeats_each_pixel():
    x = onp.arange(2 * 3 * 2 * 3, dtype=onp.float32).reshape(2, 3, 2, 3)
    want = x.repeat(2, axis=2).repeat(2, axis=3)
    onp.testing.assert_array_equal(npx.upsampling(np.array(x), scale=2).asnumpy(), want)

    class Legacy(gluon.HybridBlock):
        def hybrid_forward(self, F, v):
            return F.UpSampling(v, scale=2, sample_type="nearest")

    for block in (nn.UpSampling2D(2), Legacy()):
        for hybridize in (False, True):
            block.hybridize(hybridize)
            data = np.array(x)
            data.attach_grad()
            with autograd.record():
                y = block(data)
            y.backward()
            onp.testing.assert_array_equal(y.asnumpy(), want)
            onp.testing.assert_array_equal(data.grad.asnumpy(), onp.full(x.shape, 4.0))
    with pytest.raises(ValueError, match="bilinear"):
        npx.upsampling(np.array(x), sample_type="bilinear")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_is_numpys(mode):
    x = onp.random.RandomState(3).uniform(-1, 1, (2, 3, 4, 5)).astype(onp.float32)
    widths = [0, 0, 0, 0, 2, 3, 3, 1]
    kwargs = {"constant_values": 0.25} if mode == "constant" else {}
    want = onp.pad(x, list(zip(widths[::2], widths[1::2])), mode=mode, **kwargs)
    got = npx.pad(np.array(x), mode=mode, pad_width=widths, constant_value=0.25)
    onp.testing.assert_array_equal(got.asnumpy(), want)


def test_reflection_pad_layer_hybridized_and_mxnet1_pad():
    x = onp.random.RandomState(4).uniform(-1, 1, (1, 2, 4, 4)).astype(onp.float32)
    want = onp.pad(x, [(0, 0), (0, 0), (2, 2), (2, 2)], mode="reflect")
    layer = nn.ReflectionPad2D(2)
    for hybridize in (False, True):
        layer.hybridize(hybridize)
        onp.testing.assert_array_equal(layer(np.array(x)).asnumpy(), want)

    class Legacy(gluon.HybridBlock):
        def hybrid_forward(self, F, v):
            return F.pad(v, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1))

    onp.testing.assert_array_equal(Legacy()(np.array(x)).asnumpy(),
                                   onp.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="edge"))
    with pytest.raises(ValueError, match="mode"):
        npx.pad(np.array(x), mode="wrap", pad_width=[0] * 8)


BILINEAR_SCRIPT = """
import sys
import mxnet as mx, numpy as onp
x = mx.nd.array(onp.load(sys.argv[1]))
onp.savez(sys.argv[2], up=mx.nd.contrib.BilinearResize2D(x, height=7, width=9).asnumpy(),
          down=mx.nd.contrib.BilinearResize2D(x, height=3, width=2).asnumpy())
"""


@needs_mxnet
def test_bilinear_resize_agrees_with_mxnet(tmp_path):
    x = onp.random.RandomState(6).uniform(-1, 1, (2, 3, 4, 5)).astype(onp.float32)
    onp.save(tmp_path / "x.npy", x)
    run_in_mxnet(BILINEAR_SCRIPT, tmp_path / "x.npy", tmp_path / "out.npz")
    want = onp.load(tmp_path / "out.npz")

    class Legacy(gluon.HybridBlock):
        def hybrid_forward(self, F, v):
            return F.contrib.BilinearResize2D(v, height=7, width=9)

    block = Legacy()
    for hybridize in (False, True):
        block.hybridize(hybridize)
        onp.testing.assert_allclose(block(np.array(x)).asnumpy(), want["up"], rtol=1e-5,
                                    atol=1e-6)
    onp.testing.assert_allclose(npx.bilinear_resize2d(np.array(x), 3, 2).asnumpy(), want["down"],
                                rtol=1e-5, atol=1e-6)
