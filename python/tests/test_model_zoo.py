"""gluon.model_zoo.vision from Python: MXNet's names and constructors, the committed
fixtures MXNet saved (mobilenet0.25, squeezenet1.1) and, where MXNet 1.9.1 is in
bench/.venv, every network of the zoo saved by MXNet with random weights and loaded here:
dlc predicts what MXNet predicted, eagerly and hybridized, to 1e-4 of the outputs' scale."""
import subprocess

import numpy as onp
import pytest

import dlc
from dlc import autograd, np, npx
from dlc.gluon import nn
from dlc.gluon.model_zoo import vision

from conftest import MXNET_FIXTURES, SOURCE_DIR
from test_mxnet_parity import VENV_PYTHON, mxnet_available


def zoo_input(name):
    """mxnet_zoo_reference.py's input: sin(0.37 i) over the flat index, 2 images."""
    size = 299 if name.startswith("inception") else 224
    return onp.sin(0.37 * onp.arange(2 * 3 * size * size)).reshape(2, 3, size, size).astype(onp.float32)


def expect_mxnet_prediction(name, params, output, hybridize):
    net = vision.get_model(name, classes=10)
    net.load_parameters(str(params))
    if hybridize:
        net.hybridize()
    with autograd.pause():
        got = net(np.array(zoo_input(name))).asnumpy()
    want = npx.load(str(output))["output"].asnumpy()
    assert got.shape == want.shape
    scale = onp.abs(want).max()
    assert onp.abs(got - want).max() <= 1e-4 * scale, name


def test_names_and_constructors_are_mxnets():
    names = vision.mxnet_model_names()
    assert len(names) == 34
    assert vision.model_names() == names + ["vit_b_16"]
    for name in ("resnet50_v1", "resnet152_v2", "vgg19_bn", "alexnet", "densenet201",
                 "squeezenet1.0", "inceptionv3", "mobilenet0.25", "mobilenetv2_0.75"):
        assert name in names
    # MXNet's constructor functions, with its spelling of the widths.
    assert vision.mobilenet_v2_0_25(classes=3) is not None
    assert vision.mobilenet0_25(classes=3) is not None
    assert vision.inception_v3 is not None and vision.resnet18_v1 is not None
    with pytest.raises(ValueError, match="no model named 'resnet19_v1'"):
        vision.get_model("resnet19_v1")
    path = vision.pretrained_file("squeezenet1.1", root="/tmp/store")
    assert path == "/tmp/store/squeezenet1.1-33ba0f93.params"
    with pytest.raises(dlc.DLCError, match="squeezenet1.1-33ba0f93.params"):
        vision.get_model("squeezenet1.1", pretrained=True, root="/nonexistent/store")


@pytest.mark.parametrize("name", ["mobilenet0.25", "squeezenet1.1"])
@pytest.mark.parametrize("hybridize", [False, True])
def test_committed_mxnet_networks_predict_as_mxnet(name, hybridize):
    zoo = MXNET_FIXTURES / "zoo"
    expect_mxnet_prediction(name, zoo / f"{name}.params", zoo / f"{name}.output.params", hybridize)


def test_new_layers_from_python():
    x = np.array(onp.random.RandomState(3).uniform(-1, 1, (2, 4, 5, 5)).astype(onp.float32))
    cat = nn.HybridConcatenate(axis=1)
    cat.add(nn.Identity(), nn.GlobalAvgPool2D())
    with pytest.raises(dlc.DLCError):
        cat(x)  # (2, 4, 5, 5) and (2, 4, 1, 1) do not concatenate along channels
    pools = nn.HybridConcatenate(axis=1)
    pools.add(nn.GlobalAvgPool2D(), nn.GlobalMaxPool2D())
    y = pools(x).asnumpy()
    xs = x.asnumpy()
    onp.testing.assert_allclose(y[:, :4, 0, 0], xs.mean(axis=(2, 3)), rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(y[:, 4:, 0, 0], xs.max(axis=(2, 3)), rtol=0, atol=0)
    assert nn.HybridConcurrent is nn.HybridConcatenate
    onp.testing.assert_array_equal(npx.relu6(np.array([-1.0, 3.0, 7.0])).asnumpy(), [0, 3, 6])


needs_mxnet = pytest.mark.skipif(not mxnet_available(),
                                 reason="MXNet 1.9.1 is not in bench/.venv (bench/setup-peers.sh)")


@needs_mxnet
def test_every_network_mxnet_saved_predicts_as_mxnet(tmp_path):
    names = vision.mxnet_model_names()
    subprocess.run([str(VENV_PYTHON), str(SOURCE_DIR / "python" / "tests" / "mxnet_zoo_reference.py"),
                    str(tmp_path), "10", *names], check=True, capture_output=True)
    for name in names:
        for hybridize in (False, True):
            expect_mxnet_prediction(name, tmp_path / f"{name}.params",
                                    tmp_path / f"{name}.output.params", hybridize)


def test_fine_tuning_example_replaces_the_output_layer(tmp_path):
    """examples/python/fine_tune.py: MXNet's mobilenet0.25 weights (the committed fixture),
    a new output layer for a folder of 2 classes, one epoch, hybridized."""
    import sys
    from dlc.gluon.data.vision import save_image
    rng = onp.random.RandomState(5)
    for split in ("train", "test"):
        for label in ("cats", "dogs"):
            (tmp_path / split / label).mkdir(parents=True)
            for i in range(4):
                image = rng.randint(0, 256, (40, 40, 3)).astype(onp.uint8)
                save_image(np.array(image), str(tmp_path / split / label / f"{i}.png"))
    out = subprocess.run([sys.executable, str(SOURCE_DIR / "examples" / "python" / "fine_tune.py"),
                          "--data", str(tmp_path), "--params", str(MXNET_FIXTURES / "zoo" / "mobilenet0.25.params"),
                          "--params-classes", "10", "--epochs", "1", "--image-size", "32",
                          "--batch-size", "4"], check=True, capture_output=True, text=True).stdout
    assert "fine-tuning mobilenet0.25 (MXNet weights) on 8 images of 2 classes" in out
    assert "[Epoch 1] loss" in out and "test accuracy" in out


def test_a_zoo_network_takes_a_new_output_layer():
    net = vision.get_model("squeezenet1.1", classes=10)
    net.load_parameters(str(MXNET_FIXTURES / "zoo" / "squeezenet1.1.params"))
    assert type(net.features).__name__ == "HybridSequential"
    head = nn.HybridSequential()
    head.add(nn.Conv2D(4, 1), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
    net.output = head
    net.output.initialize()
    assert [k for k in net.collect_params() if k.startswith("output.")] == ["output.0.weight",
                                                                           "output.0.bias"]
    net.hybridize()
    assert net(np.ones((1, 3, 96, 96))).shape == (1, 4)
    with pytest.raises(AttributeError, match="no attribute 'classifier'"):
        net.classifier
