"""dlc's errors reach Python as exceptions with dlc's message, typed as Python code expects;
bad calls raise, never crash the interpreter."""
import subprocess
import sys

import pytest

import dlc
from dlc import autograd, gluon, np, npx
from dlc.gluon import nn


def test_error_classes():
    assert issubclass(dlc.DLCError, RuntimeError) and dlc.MXNetError is dlc.DLCError
    for cls, builtin in [(dlc.base.ShapeError, ValueError), (dlc.base.ValueError, ValueError),
                         (dlc.base.IndexError, IndexError), (dlc.base.DTypeError, TypeError),
                         (dlc.base.UnsupportedError, NotImplementedError),
                         (dlc.base.OutOfMemoryError, MemoryError)]:
        assert issubclass(cls, dlc.DLCError) and issubclass(cls, builtin)


def test_messages_name_the_op_shapes_and_devices():
    with pytest.raises(dlc.base.ShapeError) as shape:
        np.matmul(np.ones((2, 3)), np.ones((4, 5)))
    assert "2x3" in str(shape.value) and "4x5" in str(shape.value)
    with pytest.raises(dlc.base.DeviceMismatchError) as devices:
        np.ones(2) * np.ones(2, device=npx.cpu(1))
    assert "cpu(0)" in str(devices.value) and "cpu(1)" in str(devices.value)
    with pytest.raises(TypeError, match="add: inputs must have one dtype, got int64 and float32"):
        np.ones(2, dtype="int64") + np.ones(2)
    with pytest.raises(ValueError, match="cannot be evenly split"):
        gluon.utils.split_and_load(np.ones((3, 2)), [npx.cpu(0), npx.cpu(1)])


BAD_CALLS = [
    lambda: np.zeros((-1, 2)),
    lambda: np.zeros("abc"),
    lambda: np.ones((2,), dtype="float128"),
    lambda: np.ones(2, device="tpu"),
    lambda: np.ones(2, device=npx.cpu(100000)),
    lambda: np.array([[1, 2], [3]]),
    lambda: np.ones(3).reshape(4),
    lambda: np.ones(3)[5],
    lambda: np.ones((2, 2))[:, 7],
    lambda: np.ones(3).astype("string"),
    lambda: np.sum(np.ones(3), axis=4),
    lambda: np.transpose(np.ones((2, 3)), (0, 0)),
    lambda: np.concatenate([]),
    lambda: np.concatenate([np.ones(2), np.ones((2, 2))]),
    lambda: np.split(np.ones(5), 2),
    lambda: np.ones(3).grad.asnumpy(),
    lambda: np.ones(3).backward(),
    lambda: autograd.backward([np.ones(2)], [np.ones(3)]),
    lambda: npx.convolution(np.ones((1, 1, 3, 3)), np.ones((2, 2, 2, 2))),
    lambda: npx.pooling(np.ones((1, 1, 3, 3)), kernel=(5, 5)),
    lambda: npx.softmax(np.ones(3), axis=3),
    lambda: nn.Dense(-3),
    lambda: nn.Conv2D(4, (1, 2, 3)),
    lambda: nn.MaxPool2D(pool_size=(2, 3)),
    lambda: nn.Conv2D(4, 3, layout="NHWC"),
    lambda: nn.Activation("swishy")(np.ones(2)),
    lambda: nn.Dense(2)(np.ones(2)),
    lambda: gluon.Parameter("w", shape=(2,)).data(),
    lambda: gluon.Trainer({}, "sgd").step(-1),
    lambda: gluon.loss.SoftmaxCrossEntropyLoss()(np.ones((2, 3)), np.array([0, 7], dtype="int64")).asnumpy(),
    lambda: gluon.data.DataLoader(gluon.data.ArrayDataset(np.ones((2, 1)), [0, 1]), 1, last_batch="some"),
    lambda: gluon.data.ArrayDataset(np.ones((2, 1)), [0]),
    lambda: gluon.data.vision.transforms.CenterCrop(50)(np.ones((4, 4, 3), dtype="uint8")),
    lambda: dlc.CompiledModel("/nonexistent.dlc"),
    lambda: npx.load("/nonexistent.safetensors"),
    lambda: dlc.init.Xavier(rnd_type="cauchy"),
]


@pytest.mark.parametrize("call", range(len(BAD_CALLS)))
def test_bad_calls_raise(call):
    with pytest.raises(Exception) as info:
        BAD_CALLS[call]()
    assert str(info.value)  # every error says something
    assert not isinstance(info.value, SystemError)


def test_bad_calls_never_kill_the_interpreter():
    # The same calls in a fresh interpreter: it must reach its end and exit normally.
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "import test_errors\n"
        "for call in test_errors.BAD_CALLS:\n"
        "    try:\n"
        "        call()\n"
        "    except Exception:\n"
        "        pass\n"
        "print('survived')\n" % str(__import__('pathlib').Path(__file__).parent))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "survived" in result.stdout, result.stderr[-2000:]
