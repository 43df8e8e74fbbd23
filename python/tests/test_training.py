"""Training from Python: the tutorial's multi-device loop (examples/python) computes what
dlc-train computes with the same settings, number for number; the GIL is free while dlc
computes."""
import subprocess
import sys
import threading
import time

import pytest

from dlc import np, npx

from conftest import BUILD_DIR, SOURCE_DIR, assert_same_parameters

sys.path.insert(0, str(SOURCE_DIR / "examples" / "python"))
import train_fashion_mnist  # noqa: E402

SETTINGS = dict(epochs=1, batch_size=64, limit=640, seed=5, lr=0.002, optimizer="adam")


def dlc_train(out, *flags):
    command = [str(BUILD_DIR / "bin" / "dlc-train"), "--epochs", str(SETTINGS["epochs"]),
               "--batch-size", str(SETTINGS["batch_size"]), "--limit", str(SETTINGS["limit"]),
               "--seed", str(SETTINGS["seed"]), "--lr", str(SETTINGS["lr"]),
               "--optimizer", SETTINGS["optimizer"], "--devices", "cpu:0,cpu:1",
               "--out", str(out), *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    line = [l for l in result.stdout.splitlines() if l.startswith("dlc-train: test accuracy")][0]
    return float(line.split()[3].rstrip(";"))


@pytest.mark.parametrize("compiled_step", [False, True], ids=["seed-loop", "compiled-step"])
def test_python_training_equals_dlc_train(tmp_path, compiled_step):
    ours = train_fashion_mnist.train(devices=[npx.cpu(0), npx.cpu(1)], out=str(tmp_path / "py"),
                                     compiled_step=compiled_step, log=lambda line: None,
                                     **SETTINGS)
    theirs = dlc_train(tmp_path / "cxx", "--compiled-step=%s" % str(compiled_step).lower())
    assert ours[2] == pytest.approx(theirs, abs=1e-4)
    assert ours[2] > 0.15  # it learned in 10 steps: 10 classes, chance is 0.1
    assert_same_parameters(tmp_path / "py" / "leafnet.safetensors",
                           tmp_path / "cxx" / "leafnet.safetensors")


def test_the_gil_is_free_while_dlc_computes():
    a = np.random.uniform(size=(768, 768))
    done = threading.Event()
    progress = []

    def compute():
        y = a
        for _ in range(12):
            y = np.matmul(y, a) * (1.0 / 768)
        y.wait_to_read()
        done.set()

    worker = threading.Thread(target=compute)
    started = time.perf_counter()
    worker.start()
    while not done.is_set():
        progress.append(time.perf_counter() - started)
    worker.join()
    # The loop ran throughout: the GIL was not held while the thread waited for dlc.
    assert len(progress) > 1000


def test_train_step_keyword_arguments_are_compile_options():
    from dlc import gluon
    from dlc.gluon import nn
    results = {}
    for fuse in (True, False):
        np.random.seed(3)
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
        net.initialize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        step = gluon.TrainStep(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer,
                               [npx.cpu(0)], fuse=fuse)
        assert step.compile_options["fuse"] is fuse
        x = np.random.uniform(-1, 1, size=(4, 5))
        y = np.array([0, 1, 2, 1])
        losses = [float(step(x, y).sum()) for _ in range(3)]
        assert step.compiles == 1
        results[fuse] = losses
    assert results[True] == pytest.approx(results[False], rel=1e-5)
    with pytest.raises(TypeError, match="TrainStep.*unexpected keyword argument 'fused'"):
        gluon.TrainStep(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, [npx.cpu(0)],
                        fused=True)
