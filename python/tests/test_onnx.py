"""dlc.onnx from Python: a model PyTorch exported (unittests/Onnx/Inputs/small, written by
onnx_reference.py) gives PyTorch's logits and parameter gradients, eagerly and
hybridized, at opsets 13 and 17; it trains and keeps predicting with what it learned; bad
files and unsupported nodes are errors naming them. Zoo networks and BERT exported to ONNX
import back to the same outputs, and (where bench/.venv has onnxruntime) ONNX Runtime
computes what dlc does with the exported files."""
import subprocess

import numpy as onp
import pytest

import dlc
from conftest import SOURCE_DIR
from dlc import autograd, gluon, init, np, npx, onnx
from dlc.gluon.model_zoo import text, vision
from test_mxnet_parity import VENV_PYTHON

SMALL = SOURCE_DIR / "unittests" / "Onnx" / "Inputs" / "small"


def reference():
    return {name: value.asnumpy() for name, value in
            npx.load(str(SMALL / "reference.safetensors")).items()}


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("hybridize", [False, True])
def test_exported_model_gives_pytorchs_logits_and_gradients(opset, hybridize):
    ref = reference()
    net = onnx.import_model(str(SMALL / f"opset{opset}.onnx"))
    assert net.inputs == [{"name": "image", "dtype": "float32", "shape": ("batch", 3, 15, 15)}]
    if hybridize:
        net.hybridize()
    params = net.collect_params()
    assert params["bn.running_mean"].grad_req == "null"
    x = np.array(ref["image"])
    with autograd.record():
        y = net(x)
        loss = (y * np.array(ref["weights"])).sum()
    loss.backward()
    onp.testing.assert_allclose(y.asnumpy(), ref["logits"], rtol=1e-4, atol=1e-5)
    trained = [name for name in params if params[name].grad_req != "null"]
    assert sorted("grad." + name for name in trained) == sorted(
        k for k in ref if k.startswith("grad."))
    for name in trained:
        want = ref["grad." + name]
        got = params[name].grad().asnumpy()
        scale = max(float(onp.abs(want).max()), 1e-3)
        assert float(onp.abs(got - want).max()) <= 1e-3 * scale, name


def test_imported_model_trains_and_predicts_with_what_it_learned():
    net = onnx.import_model(str(SMALL / "opset17.onnx"))
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = np.random.normal(size=(8, 3, 15, 15))
    labels = np.array(onp.arange(8) % 10, dtype="int64")
    losses = []
    for _ in range(5):
        with autograd.record():
            loss = loss_fn(net(x), labels)
        loss.backward()
        trainer.step(8)
        losses.append(float(loss.mean()))
    assert losses[-1] < losses[0]
    # The eager path reads the same, trained parameters.
    compiled = net(x).asnumpy()
    net.hybridize(False)
    onp.testing.assert_allclose(net(x).asnumpy(), compiled, rtol=1e-4, atol=1e-5)


def test_bad_files_and_unsupported_nodes_are_named(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes((SMALL / "opset17.onnx").read_bytes()[:500])
    with pytest.raises(Exception, match="not an ONNX model"):
        onnx.import_model(str(broken))
    with pytest.raises(Exception, match="ONNX model .*missing.onnx"):
        onnx.import_model(str(tmp_path / "missing.onnx"))
    net = onnx.import_model(str(SMALL / "opset17.onnx"), input_shapes={"image": (2, 3, 15, 15)})
    assert net.inputs[0]["shape"] == (2, 3, 15, 15)
    with pytest.raises(Exception, match="the model declares 'image' float32 2x3x15x15"):
        net(np.zeros((1, 3, 15, 15)))


def onnxruntime_available():
    if not VENV_PYTHON.exists():
        return False
    return subprocess.run([str(VENV_PYTHON), "-c", "import onnxruntime, safetensors"],
                          capture_output=True).returncode == 0


def small_bert():
    net = text.BertModel(vocab_size=50, units=16, hidden_size=32, num_layers=2, num_heads=2,
                         max_length=16)
    net.initialize(init.Normal(0.2))
    ids = np.array(onp.arange(18).reshape(2, 9) % 50, dtype="int64")
    types = np.array(onp.arange(18).reshape(2, 9) % 2, dtype="int64")
    return net, [ids, types, np.ones((2, 9))]


def exported_networks():
    # DenseNet's last pool is 7x7: it takes 224x224 images.
    for name, shape in [("resnet18_v1", (2, 3, 32, 32)), ("mobilenetv2_0.25", (2, 3, 32, 32)),
                        ("densenet121", (1, 3, 224, 224))]:
        net = vision.get_model(name, classes=10)
        net.initialize(init.Xavier())
        yield name, net, [np.random.normal(size=shape)]
    yield ("bert",) + small_bert()


def test_networks_export_and_import_back(tmp_path):
    for name, net, inputs in exported_networks():
        net.hybridize()
        before = net(*inputs)
        before = before if isinstance(before, tuple) else (before,)
        path = str(tmp_path / (name + ".onnx"))
        net.export_onnx(path, [x.shape for x in inputs], [x.dtype for x in inputs])
        back = onnx.import_model(path)
        assert [i["name"] for i in back.inputs] == (
            ["data"] if len(inputs) == 1 else [f"data{i}" for i in range(len(inputs))])
        after = back(*inputs)
        after = after if isinstance(after, tuple) else (after,)
        for a, b in zip(after, before):
            onp.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-5,
                                        err_msg=name)


@pytest.mark.skipif(not onnxruntime_available(),
                    reason="onnxruntime is not in bench/.venv (bench/setup-peers.sh)")
def test_exported_networks_run_in_onnx_runtime(tmp_path):
    for name, net, inputs in exported_networks():
        net.hybridize()
        ours = net(*inputs)
        ours = ours if isinstance(ours, tuple) else (ours,)
        path = tmp_path / (name + ".onnx")
        dlc.onnx.export_model(net, str(path), [x.shape for x in inputs],
                              [x.dtype for x in inputs])
        names = ["data"] if len(inputs) == 1 else [f"data{i}" for i in range(len(inputs))]
        npx.save(str(tmp_path / "in.safetensors"), dict(zip(names, inputs)))
        result = subprocess.run(
            [str(VENV_PYTHON), str(SOURCE_DIR / "python" / "tests" / "onnxruntime_run.py"),
             str(path), str(tmp_path / "in.safetensors"), str(tmp_path / "out.safetensors")],
            capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        theirs = npx.load(str(tmp_path / "out.safetensors"))
        for i, mine in enumerate(ours):
            key = "output" if i == 0 else f"output{i}"
            onp.testing.assert_allclose(theirs[key].asnumpy(), mine.asnumpy(), rtol=1e-4,
                                        atol=1e-5, err_msg=f"{name} {key}")


def test_an_op_without_onnx_form_is_refused_and_nothing_written(tmp_path):
    class Noisy(gluon.HybridBlock):
        def forward(self, x):
            return x + np.random.normal(size=x.shape)

    with pytest.raises(Exception, match="'dlc.random_normal'.*has no ONNX form"):
        Noisy().export_onnx(str(tmp_path / "noisy.onnx"), (2, 3))
    assert not (tmp_path / "noisy.onnx").exists()
