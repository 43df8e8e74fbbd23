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


# --- numpy's semantics where dlc differed silently (issue: hardening, second round) -------

def test_true_division_of_integers_gives_floats():
    # numpy and MXNet: [3, 4] / 2 is [1.5, 2.0] as float; dlc truncated to [1, 2].
    a = np.array([3, 4], dtype="int32")
    for result in [a / 2, a / np.array([2, 2], dtype="int32"), np.divide(a, 2),
                   np.true_divide(a, 2), a / 2.0, np.divide(a, np.array([2, 2], dtype="int32"))]:
        assert result.dtype == "float32"
        assert result.asnumpy().tolist() == [1.5, 2.0]
    assert (6 / np.array([4], dtype="int64")).asnumpy().tolist() == [1.5]
    assert (np.array([True, False]) / 2).asnumpy().tolist() == [0.5, 0.0]
    # Floats divide as before.
    assert (np.array([3.0, 4.0]) / 2).asnumpy().tolist() == [1.5, 2.0]


def test_repr_of_a_failed_computation_raises_its_error():
    # It printed "(symbolic)", as for a value being traced, and hid the error.
    bad = gluon.loss.SoftmaxCrossEntropyLoss()(np.ones((2, 3)), np.array([0, 7], dtype="int64"))
    with pytest.raises(ValueError, match="label 7 of row 1 is outside"):
        repr(bad)


def test_shapes_take_integers_only():
    # np.zeros((2.5, 3)) made a 2x3 array; numpy raises TypeError.
    with pytest.raises(TypeError, match=r"shape \(2\.5, 3\): expected an integer, got 2\.5 \(float\)"):
        np.zeros((2.5, 3))
    with pytest.raises(TypeError, match="expected an int"):
        np.ones(2.0)
    # numpy's integers are integers.
    import numpy
    assert np.zeros((numpy.int64(2), numpy.int32(3))).shape == (2, 3)
    # Past 64 bits: a message, not pybind11's "Unable to cast Python instance".
    with pytest.raises(ValueError, match="18446744073709551616 does not fit in a 64-bit integer"):
        np.zeros((2 ** 64,))


def test_a_hybridized_forward_returning_other_than_arrays_is_named():
    class TwoOutputs(gluon.HybridBlock):
        def forward(self, x):
            return x * 2, 1

    block = TwoOutputs()
    assert len(block(np.ones(2))) == 2  # eagerly, forward returns what it returns
    block.hybridize()
    with pytest.raises(NotImplementedError) as info:
        block(np.ones(2))
    message = str(info.value)
    assert "TwoOutputs.forward returned a tuple of 2 (ndarray, int)" in message, message
    assert "Unable to cast" not in message

    class Halves(gluon.HybridBlock):
        def forward(self, x):
            return x * 2, x + 1

    seq = nn.HybridSequential()
    seq.add(Halves())
    with pytest.raises(NotImplementedError, match="returned a tuple of 2"):
        seq(np.ones(2))


def test_split_and_load_names_a_batch_axis_out_of_range():
    with pytest.raises(ValueError, match=r"batch_axis 3 is out of range for data of shape \(4, 2\) \(2 axes\)"):
        gluon.utils.split_and_load(np.ones((4, 2)), [npx.cpu(0), npx.cpu(1)], batch_axis=3)
    with pytest.raises(ValueError, match="batch_axis -3 is out of range"):
        gluon.utils.split_data(np.ones((4, 2)), 2, batch_axis=-3)


def test_load_parameters_names_a_directory(tmp_path):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.raises(dlc.DLCError, match="it is a directory"):
        net.load_parameters(str(tmp_path))
    with pytest.raises(dlc.DLCError, match="it is a directory"):
        npx.load(str(tmp_path))


def test_layers_refuse_empty_windows_when_made():
    # Conv2D(4, 0) was accepted and failed only when run.
    with pytest.raises(ValueError, match=r"Conv2D: kernel_size \(0, 0\) must be at least 1"):
        nn.Conv2D(4, 0)
    with pytest.raises(ValueError, match=r"Conv2D: strides \(1, 0\) must be at least 1"):
        nn.Conv2D(4, 3, strides=(1, 0))
    with pytest.raises(ValueError, match=r"Conv2D: padding \(-1, -1\) must be at least 0"):
        nn.Conv2D(4, 3, padding=-1)
    with pytest.raises(ValueError, match=r"MaxPool2D: pool_size \(0, 0\) must be at least 1"):
        nn.MaxPool2D(pool_size=0)
    with pytest.raises(ValueError, match=r"AvgPool2D: strides \(-2, -2\) must be at least 0"):
        nn.AvgPool2D(pool_size=2, strides=-2)


def test_a_data_loader_whose_workers_cannot_start_raises():
    # It aborted the interpreter ("terminate called without an active exception") when
    # the system refused a worker thread. Here an address-space limit refuses their stacks.
    script = (
        "import resource, sys\n"
        "import dlc\n"
        "from dlc import gluon, np\n"
        "data = gluon.data.ArrayDataset(np.ones((8, 2)), list(range(8)))\n"
        "loader = gluon.data.DataLoader(data, 2, num_workers=1000)\n"
        "used = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
        "resource.setrlimit(resource.RLIMIT_AS, (used + (512 << 20), resource.RLIM_INFINITY))\n"
        "try:\n"
        "    for batch in loader:\n"
        "        pass\n"
        "    print('no error')\n"
        "except dlc.DLCError as e:\n"
        "    print('raised:', e)\n"
        "for batch in gluon.data.DataLoader(data, 2, num_workers=2):\n"
        "    pass\n"
        "print('still works')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "raised: DataLoader: the system started" in result.stdout, result.stdout + result.stderr
    assert "worker threads and refused the next" in result.stdout
    assert "still works" in result.stdout
    with pytest.raises(ValueError, match="num_workers = 100000 worker threads is more than dlc starts"):
        gluon.data.DataLoader(gluon.data.ArrayDataset(np.ones((2, 1)), [0, 1]), 1,
                              num_workers=100000)
