"""nn.HybridLambda and nn.Lambda (a function or an operator's name) and nearest
up-sampling (nn.UpSampling2D, npx.upsampling, MXNet 1.x's F.UpSampling): eager and
hybridized alike, values as numpy computes them."""
import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from dlc.gluon import nn


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
