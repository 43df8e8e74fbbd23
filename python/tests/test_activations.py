"""gluon.nn's activation layers and npx's activation functions: their values against
numpy's formulas, eager against hybridized (values and gradients, PReLU's slopes
included), and against MXNet 1.9.1's own layers when bench/.venv has it."""
import numpy as onp
import pytest

from dlc import autograd, init, np, npx
from dlc.gluon import nn
from test_mxnet_parity import needs_mxnet, run_in_mxnet

SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def sigmoid(t):
    return 1 / (1 + onp.exp(-t))


def erf(t):
    from math import erf as scalar_erf
    return onp.vectorize(scalar_erf)(t)


# (name, the layer, the formula over an NCHW batch of 3 channels)
LAYERS = [
    ("LeakyReLU(0.1)", lambda: nn.LeakyReLU(0.1), lambda t: onp.where(t > 0, t, 0.1 * t)),
    ("PReLU", lambda: nn.PReLU(), lambda t: onp.where(t > 0, t, 0.25 * t)),
    ("ELU(0.7)", lambda: nn.ELU(0.7), lambda t: onp.where(t > 0, t, 0.7 * onp.expm1(t))),
    ("SELU", nn.SELU, lambda t: SELU_SCALE * onp.where(t > 0, t, SELU_ALPHA * onp.expm1(t))),
    ("GELU", nn.GELU, lambda t: 0.5 * t * (1 + erf(t / onp.sqrt(2)))),
    ("Swish(1.5)", lambda: nn.Swish(1.5), lambda t: t * sigmoid(1.5 * t)),
    ("SiLU", nn.SiLU, lambda t: t * sigmoid(t)),
    ("HardSigmoid", nn.HardSigmoid, lambda t: onp.clip(0.2 * t + 0.5, 0, 1)),
    ("HardSwish", nn.HardSwish, lambda t: t * onp.clip(t + 3, 0, 6) / 6),
    ("Activation(softsign)", lambda: nn.Activation("softsign"), lambda t: t / (1 + abs(t))),
]


def batch():
    return onp.random.RandomState(3).uniform(-4, 4, (2, 3, 4, 5)).astype(onp.float32)


@pytest.mark.parametrize("name, make, formula", LAYERS, ids=[c[0] for c in LAYERS])
def test_each_layer_computes_its_formula_eagerly_and_hybridized(name, make, formula):
    x = batch()
    results = []
    for hybridize in (False, True):
        layer = make()
        layer.initialize()
        if hybridize:
            layer.hybridize()
        data = np.array(x)
        data.attach_grad()
        with autograd.record():
            y = layer(data)
            loss = (y * y).sum()
        loss.backward()
        onp.testing.assert_allclose(y.asnumpy(), formula(x.astype(onp.float64)), rtol=2e-6,
                                    atol=2e-6, err_msg=name)
        results.append((y.asnumpy(), data.grad.asnumpy()))
    onp.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
    assert onp.abs(results[0][1]).max() > 0


def test_prelu_learns_one_slope_per_channel():
    x = batch()
    slopes = []
    for hybridize in (False, True):
        layer = nn.PReLU(in_channels=3)
        layer.initialize()
        assert layer.alpha.shape == (3,)
        assert list(layer.collect_params()) == ["alpha"]
        if hybridize:
            layer.hybridize()
        with autograd.record():
            loss = (layer(np.array(x)) * np.array(onp.arange(120.0).reshape(x.shape))).sum()
        loss.backward()
        slopes.append(layer.alpha.grad().asnumpy())
    # d loss / d alpha_c = sum over channel c's negative inputs of x * weight
    w = onp.arange(120.0).reshape(x.shape)
    want = onp.where(x < 0, x * w, 0).sum(axis=(0, 2, 3))
    for got in slopes:
        onp.testing.assert_allclose(got, want, rtol=1e-5)


def test_npx_functions_and_mxnet_names():
    x = np.array([-2.0, -0.5, 0.0, 1.5])
    onp.testing.assert_allclose(npx.leaky_relu(x, slope=0.1).asnumpy(), [-0.2, -0.05, 0, 1.5],
                                rtol=1e-6)
    onp.testing.assert_allclose(npx.leaky_relu(x, act_type="elu", slope=1.0).asnumpy(),
                                onp.where(x.asnumpy() > 0, x.asnumpy(), onp.expm1(x.asnumpy())),
                                rtol=1e-6)
    onp.testing.assert_allclose(npx.hard_sigmoid(x).asnumpy(), [0.1, 0.4, 0.5, 0.8], rtol=1e-6)
    onp.testing.assert_allclose(npx.softsign(x).asnumpy(), [-2 / 3, -1 / 3, 0, 0.6], rtol=1e-6)
    with pytest.raises(ValueError, match="rrelu"):
        npx.leaky_relu(x, act_type="rrelu")
    with pytest.raises(ValueError, match="gamma"):
        npx.leaky_relu(x, act_type="prelu")
    with pytest.raises(ValueError, match="'erf' \\(exact\\) and 'tanh'"):
        nn.GELU("sigmoid")
    t = x.asnumpy()
    onp.testing.assert_allclose(
        nn.GELU("tanh")(x).asnumpy(),
        0.5 * t * (1 + onp.tanh(onp.sqrt(2 / onp.pi) * (t + 0.044715 * t ** 3))), rtol=1e-5)


MXNET_SCRIPT = """
import sys
import mxnet as mx, numpy as onp
from mxnet.gluon import nn
x = mx.nd.array(onp.random.RandomState(3).uniform(-4, 4, (2, 3, 4, 5)).astype(onp.float32))
prelu = nn.PReLU(in_channels=3, alpha_initializer=mx.init.Constant(0.3))
prelu.initialize()
outs = {
    "LeakyReLU(0.1)": nn.LeakyReLU(0.1)(x), "ELU(0.7)": nn.ELU(0.7)(x), "SELU": nn.SELU()(x),
    "GELU": nn.GELU()(x), "Swish(1.5)": nn.Swish(1.5)(x), "PReLU(3)": prelu(x),
    "softsign": mx.nd.Activation(x, act_type="softsign"), "hard_sigmoid": mx.nd.hard_sigmoid(x),
}
onp.savez(sys.argv[1], **{k: v.asnumpy() for k, v in outs.items()})
"""


@needs_mxnet
def test_layers_agree_with_mxnet(tmp_path):
    out = tmp_path / "mxnet.npz"
    run_in_mxnet(MXNET_SCRIPT, out)
    want = onp.load(out)
    x = np.array(batch())
    ours = {
        "LeakyReLU(0.1)": nn.LeakyReLU(0.1), "ELU(0.7)": nn.ELU(0.7), "SELU": nn.SELU(),
        "GELU": nn.GELU(), "Swish(1.5)": nn.Swish(1.5),
        "PReLU(3)": nn.PReLU(in_channels=3, alpha_initializer=init.Constant(0.3)),
        "softsign": nn.Activation("softsign"), "hard_sigmoid": nn.HardSigmoid(),
    }
    for name, layer in ours.items():
        layer.initialize()
        onp.testing.assert_allclose(layer(x).asnumpy(), want[name], rtol=1e-5, atol=1e-6,
                                    err_msg=name)
