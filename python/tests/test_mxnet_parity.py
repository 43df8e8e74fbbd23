"""dlc against MXNet 1.9.1 on the same inputs and weights: layers forward and backward, the
loss, Trainer steps and split_and_load, to 1e-5. MXNet runs in bench/.venv
(bench/setup-peers.sh makes it) through python/tests/mxnet_reference.py; without it these
tests are skipped, saying so."""
import json
import pathlib
import subprocess

import numpy as onp
import pytest

import dlc
from dlc import autograd, gluon, np, npx
from dlc.gluon import nn

from conftest import SOURCE_DIR

VENV_PYTHON = SOURCE_DIR / "bench" / ".venv" / "bin" / "python"


def mxnet_available():
    if not VENV_PYTHON.exists():
        return False
    probe = subprocess.run([str(VENV_PYTHON), "-c", "import mxnet"], capture_output=True)
    return probe.returncode == 0


needs_mxnet = pytest.mark.skipif(not mxnet_available(),
                                 reason="MXNet 1.9.1 is not in bench/.venv (bench/setup-peers.sh)")


def run_in_mxnet(script, *arguments):
    """Runs `script` (Python source) with bench/.venv's interpreter, where MXNet is."""
    result = subprocess.run([str(VENV_PYTHON), "-c", script, *map(str, arguments)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


pytestmark = pytest.mark.skipif(not mxnet_available(),
                                reason="MXNet 1.9.1 is not in bench/.venv (bench/setup-peers.sh)")

rng = onp.random.RandomState(11)


def uniform(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(onp.float32)


CASES, INPUTS = [], {}


def case(kind, name, train=True, **args):
    CASES.append({"kind": kind, "name": name, "args": args, "train": train})


# Layers: inputs, weights and head gradients.
case("dense", "dense", units=5, in_units=7, activation="relu")
INPUTS.update({"dense/x": uniform(4, 7), "dense/weight": uniform(5, 7), "dense/bias": uniform(5),
               "dense/dy": uniform(4, 5)})
case("dense", "dense_flatten", units=3, in_units=12)
INPUTS.update({"dense_flatten/x": uniform(2, 3, 2, 2), "dense_flatten/weight": uniform(3, 12),
               "dense_flatten/bias": uniform(3), "dense_flatten/dy": uniform(2, 3)})
case("conv", "conv", channels=4, kernel=3, strides=2, padding=1, in_channels=3, activation="relu")
INPUTS.update({"conv/x": uniform(2, 3, 9, 9), "conv/weight": uniform(4, 3, 3, 3),
               "conv/bias": uniform(4), "conv/dy": uniform(2, 4, 5, 5)})
case("maxpool", "maxpool", pool=3, strides=2, padding=1)
INPUTS.update({"maxpool/x": uniform(2, 3, 8, 8), "maxpool/dy": uniform(2, 3, 4, 4)})
case("avgpool", "avgpool", pool=2, strides=2)
INPUTS.update({"avgpool/x": uniform(2, 3, 8, 8), "avgpool/dy": uniform(2, 3, 4, 4)})
case("batchnorm", "batchnorm", in_channels=3)
INPUTS.update({"batchnorm/x": uniform(4, 3, 5, 5), "batchnorm/gamma": uniform(3, low=0.5, high=1.5),
               "batchnorm/beta": uniform(3), "batchnorm/running_mean": uniform(3),
               "batchnorm/running_var": uniform(3, low=0.5, high=2), "batchnorm/dy": uniform(4, 3, 5, 5)})
case("batchnorm", "batchnorm_predict", train=False, in_channels=3)
INPUTS.update({k.replace("batchnorm/", "batchnorm_predict/"): v for k, v in list(INPUTS.items())
               if k.startswith("batchnorm/")})
for act in ["relu", "sigmoid", "tanh"]:
    case("activation", f"act_{act}", activation=act)
    INPUTS.update({f"act_{act}/x": uniform(3, 4), f"act_{act}/dy": uniform(3, 4)})
case("flatten", "flatten")
INPUTS.update({"flatten/x": uniform(2, 3, 2), "flatten/dy": uniform(2, 6)})
# The loss.
case("softmax_ce", "loss")
INPUTS.update({"loss/pred": uniform(5, 4, low=-3, high=3),
               "loss/label": onp.array([0, 3, 1, 1, 2], dtype=onp.float32)})
# Trainer steps.
for optimizer, options in [("sgd", {"learning_rate": 0.1}),
                           ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
                           ("nag", {"learning_rate": 0.05, "momentum": 0.9}),
                           ("adam", {"learning_rate": 0.01})]:
    name = f"trainer_{optimizer}_{len(options)}"
    case("trainer", name, optimizer=optimizer, options=options, in_units=6, hidden=8, classes=3,
         steps=3)
    INPUTS.update({f"{name}/x": uniform(8, 6), f"{name}/label": rng.randint(0, 3, 8).astype(onp.float32),
                   f"{name}/0/weight": uniform(8, 6), f"{name}/0/bias": uniform(8),
                   f"{name}/1/weight": uniform(3, 8), f"{name}/1/bias": uniform(3)})
# split_and_load.
for name, shape, devices, axis, even in [("split_even", (4, 3), 2, 0, True),
                                         ("split_uneven", (5, 3), 2, 0, False),
                                         ("split_refused", (5, 3), 2, 0, True),
                                         ("split_axis1", (2, 7), 3, 1, False),
                                         ("split_one_device", (3, 2), 1, 0, True)]:
    case("split", name, devices=devices, batch_axis=axis, even_split=even)
    INPUTS[f"{name}/data"] = uniform(*shape)


@pytest.fixture(scope="module")
def mxnet_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mxnet")
    (folder / "cases.json").write_text(json.dumps(CASES))
    onp.savez(folder / "inputs.npz", **INPUTS)
    result = subprocess.run([str(VENV_PYTHON), str(pathlib.Path(__file__).parent / "mxnet_reference.py"),
                             str(folder / "cases.json"), str(folder / "inputs.npz"),
                             str(folder / "out.npz")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(onp.load(folder / "out.npz"))


def close(ours, theirs, what):
    onp.testing.assert_allclose(onp.asarray(ours), theirs, rtol=1e-5, atol=1e-5, err_msg=what)


def make_layer(kind, args):
    if kind == "dense":
        return nn.Dense(args["units"], activation=args.get("activation"), in_units=args["in_units"]), ["weight", "bias"]
    if kind == "conv":
        return nn.Conv2D(args["channels"], args["kernel"], strides=args["strides"], padding=args["padding"],
                         activation=args.get("activation"), in_channels=args["in_channels"]), ["weight", "bias"]
    if kind == "maxpool":
        return nn.MaxPool2D(args["pool"], args.get("strides"), padding=args.get("padding", 0)), []
    if kind == "avgpool":
        return nn.AvgPool2D(args["pool"], args.get("strides"), padding=args.get("padding", 0)), []
    if kind == "batchnorm":
        return nn.BatchNorm(in_channels=args["in_channels"]), ["gamma", "beta", "running_mean", "running_var"]
    if kind == "activation":
        return nn.Activation(args["activation"]), []
    return nn.Flatten(), []


LAYER_CASES = [c for c in CASES if c["kind"] not in ("softmax_ce", "trainer", "split")]


@pytest.mark.parametrize("spec", LAYER_CASES, ids=[c["name"] for c in LAYER_CASES])
@pytest.mark.parametrize("hybridize", [False, True], ids=["eager", "hybridized"])
def test_layers_forward_and_backward(mxnet_results, spec, hybridize):
    p = spec["name"]
    layer, params = make_layer(spec["kind"], spec["args"])
    layer.initialize()
    x = np.array(INPUTS[f"{p}/x"])
    with autograd.pause():
        layer(x)
    for name in params:
        getattr(layer, name).set_data(INPUTS[f"{p}/{name}"])
    if hybridize:
        layer.hybridize()
    x.attach_grad()
    with autograd.record(train_mode=spec["train"]):
        y = layer(x)
    y.backward(np.array(INPUTS[f"{p}/dy"]))
    close(y.asnumpy(), mxnet_results[f"{p}/y"], f"{p} output")
    if p == "batchnorm_predict":
        # Recorded in predict mode, MXNet 1.9.1 back-propagates with the training formula
        # (as if the running statistics came from this batch), not the derivative of the
        # function it computed; dlc gives that derivative (docs/from-mxnet.md).
        gamma, var = INPUTS[f"{p}/gamma"], INPUTS[f"{p}/running_var"]
        scale = (gamma / onp.sqrt(var + 1e-5))[None, :, None, None]
        close(x.grad.asnumpy(), scale * INPUTS[f"{p}/dy"], f"{p} input gradient")
    else:
        close(x.grad.asnumpy(), mxnet_results[f"{p}/dx"], f"{p} input gradient")
    for name in params:
        parameter = getattr(layer, name)
        if f"{p}/d{name}" in mxnet_results and parameter.grad_req != "null":
            close(parameter.grad().asnumpy(), mxnet_results[f"{p}/d{name}"], f"{p} d{name}")
        close(parameter.data().asnumpy(), mxnet_results[f"{p}/after_{name}"], f"{p} {name} after")


def test_softmax_cross_entropy(mxnet_results):
    pred = np.array(INPUTS["loss/pred"])
    pred.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(pred, np.array(INPUTS["loss/label"]).astype("int64"))
    loss.backward()
    close(loss.asnumpy(), mxnet_results["loss/loss"], "loss")
    close(pred.grad.asnumpy(), mxnet_results["loss/dpred"], "loss gradient")


TRAINER_CASES = [c for c in CASES if c["kind"] == "trainer"]


@pytest.mark.parametrize("spec", TRAINER_CASES, ids=[c["name"] for c in TRAINER_CASES])
def test_trainer_steps(mxnet_results, spec):
    p, args = spec["name"], spec["args"]
    net = nn.HybridSequential()
    net.add(nn.Dense(args["hidden"], activation="relu", in_units=args["in_units"]),
            nn.Dense(args["classes"], in_units=args["hidden"]))
    net.initialize()
    for k in range(2):
        net[k].weight.set_data(INPUTS[f"{p}/{k}/weight"])
        net[k].bias.set_data(INPUTS[f"{p}/{k}/bias"])
    trainer = gluon.Trainer(net.collect_params(), args["optimizer"], args["options"])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = np.array(INPUTS[f"{p}/x"])
    label = np.array(INPUTS[f"{p}/label"]).astype("int64")
    for _ in range(args["steps"]):
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        trainer.step(x.shape[0])
    for k in range(2):
        close(net[k].weight.data().asnumpy(), mxnet_results[f"{p}/{k}/weight"], f"{p} {k}.weight")
        close(net[k].bias.data().asnumpy(), mxnet_results[f"{p}/{k}/bias"], f"{p} {k}.bias")


SPLIT_CASES = [c for c in CASES if c["kind"] == "split"]


@pytest.mark.parametrize("spec", SPLIT_CASES, ids=[c["name"] for c in SPLIT_CASES])
def test_split_and_load(mxnet_results, spec):
    p, args = spec["name"], spec["args"]
    devices = [npx.cpu(k) for k in range(args["devices"])]
    call = lambda: gluon.utils.split_and_load(INPUTS[f"{p}/data"], devices,  # noqa: E731
                                              batch_axis=args["batch_axis"],
                                              even_split=args["even_split"])
    if f"{p}/error" in mxnet_results:
        with pytest.raises(ValueError):
            call()
        return
    parts = call()
    assert len(parts) == int(mxnet_results[f"{p}/count"])
    for k, part in enumerate(parts):
        assert part.device == devices[k]
        close(part.asnumpy(), mxnet_results[f"{p}/part{k}"], f"{p} part {k}")
