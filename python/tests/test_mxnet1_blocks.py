"""MXNet 1.x Gluon code: blocks with hybrid_forward(self, F, x, ...), their own parameters
made with self.params.get and passed by keyword, name_scope() and prefix=, run eagerly and
hybridized with the same results and gradients."""
import numpy as onp
import pytest

import dlc
from dlc import autograd, gluon, np
from dlc.gluon import nn


class Scale(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(Scale, self).__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(4)
            self.alpha = self.params.get("alpha", shape=(1,), init="ones")

    def hybrid_forward(self, F, x, alpha):
        gate = F.Activation(x.sum(axis=1, keepdims=True), act_type="sigmoid")
        return F.broadcast_mul(F.relu(self.dense(x)), alpha) + gate


class LegacyConvNet(gluon.HybridBlock):
    """Only MXNet 1.x operators, on weights of its own."""

    def __init__(self, prefix="legacy_"):
        super().__init__(prefix=prefix)
        with self.name_scope():
            self.conv_weight = self.params.get("conv_weight", shape=(4, 3, 3, 3))
            self.conv_bias = self.params.get("conv_bias", shape=(4,), init="zeros")
            self.fc_weight = self.params.get("fc_weight", shape=(5, 40))

    def hybrid_forward(self, F, x, conv_weight, conv_bias, fc_weight):
        y = F.Convolution(x, conv_weight, conv_bias, kernel=(3, 3), num_filter=4, pad=(1, 1))
        y = F.Activation(y, act_type="relu")
        a = F.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="max")
        b = F.Pooling(y, pool_type="avg", global_pool=True)
        z = F.concat(F.Flatten(a), F.Flatten(b), dim=1)
        return F.FullyConnected(z, fc_weight, no_bias=True, num_hidden=5)


class Siamese(gluon.HybridBlock):
    """Two inputs through one shared tower, two outputs (MXNet 1.x style)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.tower = nn.Dense(6, activation="tanh")
            self.scale = self.params.get("scale", shape=(1,), init="ones")

    def hybrid_forward(self, F, left, right, scale):
        a, b = self.tower(left), self.tower(right)
        distance = F.sum(F.square(a - b), axis=1, keepdims=True)
        return F.broadcast_mul(distance, scale), a * b


def run(net, x, hybridize):
    if hybridize:
        net.hybridize()
    inputs = x if isinstance(x, tuple) else (x,)
    with autograd.record():
        y = net(*inputs)
        outputs = y if isinstance(y, tuple) else (y,)
        loss = sum((o * o).sum() for o in outputs)
    loss.backward()
    return [o.asnumpy() for o in outputs], {k: p.grad().asnumpy() for k, p in
                                            net.collect_params().items() if p.grad_req != "null"}


def random_input(shape, seed):
    return np.array(onp.random.RandomState(seed).uniform(-1, 1, shape).astype(onp.float32))


@pytest.mark.parametrize("make, shape", [(Scale, (3, 5)), (LegacyConvNet, (2, 3, 6, 6)),
                                         (Siamese, ((4, 5), (4, 5)))])
def test_hybrid_forward_blocks_hybridize_to_their_eager_results(make, shape):
    if isinstance(shape[0], tuple):
        x = tuple(random_input(s, 4 + i) for i, s in enumerate(shape))
    else:
        x = random_input(shape, 4)
    results = []
    for hybridize in (False, True):
        dlc.np.random.seed(3)
        net = make()
        net.initialize(dlc.init.Xavier())
        results.append(run(net, x, hybridize))
    (y0, g0), (y1, g1) = results
    assert len(y0) == len(y1)
    for a, b in zip(y0, y1):
        onp.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert sorted(g0) == sorted(g1) and g0
    for name in g0:
        assert onp.abs(g0[name]).max() > 0, f"{name} got no gradient"
        onp.testing.assert_allclose(g1[name], g0[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_parameter_names_and_mistakes():
    net = Scale(prefix="scale_")
    assert list(net.collect_params()) == ["alpha", "dense.weight", "dense.bias"]
    assert net.params.get("alpha") is net.alpha  # got again, not made twice

    class NoShape(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.w = self.params.get("w", shape=(0, 3))

    with pytest.raises(ValueError, match="whole shape"):
        NoShape()

    class Unknown(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.SpatialTransformer(x)

    with pytest.raises(AttributeError, match="SpatialTransformer"):
        Unknown()(np.ones((2, 2)))

    class Neither(gluon.HybridBlock):
        pass

    with pytest.raises(Exception, match="hybrid_forward"):
        Neither()(np.ones((2, 2)))
