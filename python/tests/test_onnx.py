"""dlc.onnx from Python: a model PyTorch exported (unittests/Onnx/Inputs/small, written by
onnx_reference.py) gives PyTorch's logits and parameter gradients, eagerly and
hybridized, at opsets 13 and 17; it trains and keeps predicting with what it learned; bad
files and unsupported nodes are errors naming them."""
import numpy as onp
import pytest

from conftest import SOURCE_DIR
from dlc import autograd, gluon, np, npx, onnx

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
