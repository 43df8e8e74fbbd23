"""LayerNorm, InstanceNorm, GroupNorm and BatchNorm's use_global_stats and axis: numpy's
formulas, eager against hybridized, MXNet 1.x's F.LayerNorm and kin, and MXNet 1.9.1's
own layers with the same parameters (when bench/.venv has it)."""
import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from dlc.gluon import nn
from test_mxnet_parity import needs_mxnet, run_in_mxnet

RNG = onp.random.RandomState(8)
X = (RNG.uniform(-2, 2, (2, 6, 3, 4)) + 0.5).astype(onp.float32)
PARAMS = {  # per layer: gamma, beta (and running statistics) drawn once
    "layer": (RNG.uniform(0.5, 1.5, 4), RNG.uniform(-0.5, 0.5, 4)),
    "instance": (RNG.uniform(0.5, 1.5, 6), RNG.uniform(-0.5, 0.5, 6)),
    "group": (RNG.uniform(0.5, 1.5, 3), RNG.uniform(-0.5, 0.5, 3)),
    "batch": (RNG.uniform(0.5, 1.5, 4), RNG.uniform(-0.5, 0.5, 4), RNG.uniform(-0.5, 0.5, 4),
              RNG.uniform(0.5, 1.5, 4)),
}


def standardized(x, axes, eps=1e-5):
    x = x.astype(onp.float64)
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / onp.sqrt(x.var(axis=axes, keepdims=True) + eps)


def layers():
    """The four layers with PARAMS set, and what numpy says each computes on X."""
    g, b = PARAMS["layer"]
    layer = nn.LayerNorm(in_channels=4)
    ln = standardized(X, (3,)) * g + b
    g, b = PARAMS["instance"]
    instance = nn.InstanceNorm(in_channels=6, scale=True)
    inn = standardized(X, (2, 3)) * g[:, None, None] + b[:, None, None]
    g, b = PARAMS["group"]
    group = nn.GroupNorm(num_groups=3)
    gn = (standardized(X.reshape(2, 3, -1), (2,)) * g[:, None] + b[:, None]).reshape(X.shape)
    g, b, m, v = PARAMS["batch"]
    batch = nn.BatchNorm(axis=-1, use_global_stats=True, in_channels=4)
    bn = (X - m) / onp.sqrt(v + 1e-5) * g + b
    result = [("LayerNorm", layer, ln), ("InstanceNorm", instance, inn), ("GroupNorm", group, gn),
              ("BatchNorm(axis=-1, use_global_stats)", batch, bn)]
    for (name, block, _), values in zip(result, PARAMS.values()):
        block.initialize()
        names = ["gamma", "beta", "running_mean", "running_var"]
        for pname, value in zip(names, values):
            getattr(block, pname).set_data(np.array(value.astype(onp.float32)))
    return result


@pytest.mark.parametrize("index", range(4))
def test_each_layer_computes_its_formula_in_training_eagerly_and_hybridized(index):
    name, block, want = layers()[index]
    grads = []
    for hybridize in (False, True):
        block.hybridize(hybridize)
        data = np.array(X)
        data.attach_grad()
        with autograd.record():
            y = block(data)
            loss = (y * np.array(onp.arange(y.size, dtype=onp.float32).reshape(y.shape))).sum()
        loss.backward()
        onp.testing.assert_allclose(y.asnumpy(), want, rtol=2e-5, atol=2e-5, err_msg=name)
        grads.append([data.grad.asnumpy()] + [p.grad().asnumpy() for p in
                                              block.collect_params().values()
                                              if p.grad_req != "null"])
    for eager, compiled in zip(*grads):
        onp.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-4, err_msg=name)
    if name.startswith("BatchNorm"):  # frozen: the running statistics did not move
        onp.testing.assert_array_equal(block.running_mean.data().asnumpy(),
                                       PARAMS["batch"][2].astype(onp.float32))


def test_mxnet1_operators():
    g, b = PARAMS["group"]

    class Legacy(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            gamma, beta = F.np.array(g.astype(onp.float32)), F.np.array(b.astype(onp.float32))
            return F.GroupNorm(x, gamma, beta, num_groups=3)

    want = (standardized(X.reshape(2, 3, -1), (2,)) * g[:, None] + b[:, None]).reshape(X.shape)
    onp.testing.assert_allclose(Legacy()(np.array(X)).asnumpy(), want, rtol=2e-5, atol=2e-5)
    onp.testing.assert_allclose(npx.layer_norm(np.array(X), axis=1).asnumpy(),
                                standardized(X, (1,)), rtol=2e-5, atol=2e-5)
    with pytest.raises(ValueError, match="axis=1"):
        nn.InstanceNorm(axis=2)


MXNET_SCRIPT = """
import sys, json
import mxnet as mx, numpy as onp
from mxnet.gluon import nn
args = onp.load(sys.argv[1])
x = mx.nd.array(args["x"])
blocks = [nn.LayerNorm(in_channels=4), nn.InstanceNorm(in_channels=6, scale=True),
          nn.GroupNorm(num_groups=3), nn.BatchNorm(axis=-1, use_global_stats=True, in_channels=4)]
outs = {}
for i, block in enumerate(blocks):
    block.initialize()
    for pname, p in block.collect_params().items():
        key = "%d_%s" % (i, pname.split("_")[-1] if "running" not in pname else
                         "running_" + pname.split("_")[-1])
        p.set_data(mx.nd.array(args[key]))
    with mx.autograd.record():  # training mode: batch norm still uses its global stats
        outs[str(i)] = block(x).asnumpy()
onp.savez(sys.argv[2], **outs)
"""


@needs_mxnet
def test_layers_agree_with_mxnet(tmp_path):
    args = {"x": X}
    for i, values in enumerate(PARAMS.values()):
        for pname, value in zip(["gamma", "beta", "running_mean", "running_var"], values):
            args[f"{i}_{pname}"] = value.astype(onp.float32)
    onp.savez(tmp_path / "in.npz", **args)
    run_in_mxnet(MXNET_SCRIPT, tmp_path / "in.npz", tmp_path / "out.npz")
    want = onp.load(tmp_path / "out.npz")
    for i, (name, block, _) in enumerate(layers()):
        with autograd.record():
            y = block(np.array(X))
        onp.testing.assert_allclose(y.asnumpy(), want[str(i)], rtol=2e-5, atol=2e-5, err_msg=name)
