"""dlc.np arrays: creation, dtypes, devices, arithmetic, indexing, printing, exchange."""
import numpy as onp
import pytest

import dlc
from dlc import np, npx


def test_creation_dtypes_and_defaults():
    assert np.array([1, 2, 3]).dtype == onp.float32  # MXNet: lists become float32
    assert np.array(onp.arange(3, dtype=onp.int64)).dtype == onp.int64  # numpy keeps its own
    assert np.array(onp.ones(2)).dtype == onp.float32  # no float64 in dlc
    assert np.array([1, 2], dtype="int32").dtype == onp.int32
    assert np.array([1.5], dtype=np.float16).asnumpy()[0] == onp.float16(1.5)
    assert np.array([0.5, 2], dtype="bfloat16").dtype == "bfloat16"
    assert np.zeros((2, 3)).shape == (2, 3)
    assert np.ones(4, dtype="uint8").asnumpy().tolist() == [1, 1, 1, 1]
    assert np.full((2,), 7.0).asnumpy().tolist() == [7.0, 7.0]
    assert np.arange(5).asnumpy().tolist() == [0, 1, 2, 3, 4]
    assert np.arange(1, 7, 2, dtype="int64").asnumpy().tolist() == [1, 3, 5]
    x = np.random.uniform(-1, 1, size=(3, 4))
    assert x.shape == (3, 4) and float(x.min()) >= -1 and float(x.max()) <= 1
    assert np.random.randint(0, 5, size=(100,)).dtype == onp.int64
    with pytest.raises(TypeError):
        np.array(["a", "b"])
    with pytest.raises(TypeError):
        np.zeros((2,), dtype="complex64")


def test_the_gpu_backend_is_opened_when_a_gpu_is_first_asked_for():
    # The CUDA backend is a library of its own (libdlc_cuda.so): importing dlc and
    # computing on the CPU does not open it; asking for GPUs does, in a CUDA build, and
    # it loads (its calls into the runtime resolve against this module).
    import subprocess
    import sys
    probe = ("import dlc\n"
             "from dlc import np, npx\n"
             "(np.ones(3) + 1).wait_to_read()\n"
             "maps = lambda: open('/proc/self/maps').read()\n"
             "print('before', 'libdlc_cuda' in maps())\n"
             "npx.num_gpus()\n"
             "print('after', 'libdlc_cuda' in maps())\n"
             "print('problem', repr(dlc._dlc.gpu_backend_problem()))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "before False" in lines
    if dlc._dlc.built_with_cuda:
        assert "after True" in lines and "problem ''" in lines, out.stdout
    else:
        assert "after False" in lines


def test_devices_and_scopes():
    assert np.ones(2).device == npx.cpu(0)
    with npx.cpu(1):
        assert npx.current_device() == dlc.cpu(1)
        y = np.random.uniform(size=(3, 4))
        with dlc.cpu(2):
            assert np.zeros(1).device == dlc.cpu(2)
        assert np.zeros(1).device == npx.cpu(1)
    assert y.device == npx.cpu(1) and y.ctx == y.device
    assert np.ones(2).device == npx.cpu(0)
    x = np.ones((3, 4), device=npx.cpu(3))
    assert x.device.device_type == "cpu" and x.device.device_id == 3
    z = x.copyto(npx.cpu(1))
    assert z.device == npx.cpu(1)
    assert x.as_in_context(npx.cpu(3)) is not None
    assert x.to_device(npx.cpu(2)).device == npx.cpu(2)
    target = np.zeros((3, 4), device=npx.cpu(2))
    x.copyto(target)
    assert target.asnumpy().sum() == 12
    assert npx.num_gpus() >= 0
    assert repr(npx.cpu_pinned(0)) == "cpu_pinned(0)"
    with pytest.raises(dlc.base.DeviceMismatchError, match="cpu\\(1\\)"):
        np.ones(2, device=npx.cpu(1)) + np.ones(2, device=npx.cpu(0))


def test_arithmetic_matches_numpy():
    a_np = onp.random.RandomState(0).uniform(0.5, 2, (3, 4)).astype(onp.float32)
    b_np = onp.random.RandomState(1).uniform(0.5, 2, (4,)).astype(onp.float32)
    a, b = np.array(a_np), np.array(b_np)
    cases = [
        (a + b, a_np + b_np), (a - b, a_np - b_np), (a * b, a_np * b_np), (a / b, a_np / b_np),
        (a ** 2, a_np ** 2), (2 - a, 2 - a_np), (3 / a, 3 / a_np), (-a, -a_np),
        (abs(a - 1), onp.abs(a_np - 1)), (np.exp(a), onp.exp(a_np)), (np.log(a), onp.log(a_np)),
        (np.sqrt(a), onp.sqrt(a_np)), (np.tanh(a), onp.tanh(a_np)),
        (np.maximum(a, 1.0), onp.maximum(a_np, 1.0)), (np.minimum(a, b), onp.minimum(a_np, b_np)),
        (a.sum(axis=1), a_np.sum(axis=1)), (np.mean(a, axis=0, keepdims=True),
                                           a_np.mean(axis=0, keepdims=True)),
        (a.max(), a_np.max()), (np.min(a, axis=(0, 1)), a_np.min(axis=(0, 1))),
        (a @ np.transpose(a), a_np @ a_np.T), (np.dot(b, b), onp.dot(b_np, b_np)),
        (a.T, a_np.T), (a.reshape(2, 6), a_np.reshape(2, 6)), (a.reshape((-1,)), a_np.ravel()),
        (np.concatenate([a, a], axis=1), onp.concatenate([a_np, a_np], axis=1)),
        (np.stack([b, b]), onp.stack([b_np, b_np])),
        (np.where(a > 1, a, 0.0), onp.where(a_np > 1, a_np, 0.0)),
        (np.broadcast_to(b, (2, 4)), onp.broadcast_to(b_np, (2, 4))),
        (npx.relu(a - 1), onp.maximum(a_np - 1, 0)),
        (npx.softmax(a), onp.exp(a_np) / onp.exp(a_np).sum(-1, keepdims=True)),
    ]
    for ours, expected in cases:
        onp.testing.assert_allclose(ours.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert (a > 1).dtype == onp.bool_
    assert a.argmax(axis=1).asnumpy().tolist() == a_np.argmax(axis=1).tolist()
    parts = np.split(a, [1, 3], axis=1)
    assert [p.shape for p in parts] == [(3, 1), (3, 2), (3, 1)]


def test_in_place_operators_write_the_same_memory():
    x = np.ones((2, 2))
    view = x[0]
    x += 1
    x *= 3
    assert x.asnumpy().tolist() == [[6, 6], [6, 6]]
    assert view.asnumpy().tolist() == [6, 6]


def test_indexing_and_assignment():
    a_np = onp.arange(24, dtype=onp.float32).reshape(2, 3, 4)
    a = np.array(a_np)
    for key in [0, -1, slice(0, 1), (1, 2), (0, slice(1, 3)), (slice(None), 1),
                (Ellipsis, 2), (1, slice(None), slice(1, 3)), (slice(1, 1),)]:
        onp.testing.assert_array_equal(a[key].asnumpy(), a_np[key])
    assert a[1, 2, 3].item() == 23.0
    with pytest.raises(IndexError):
        a[2]
    with pytest.raises(IndexError):
        a[0, 0, 0, 0]
    onp.testing.assert_array_equal(a[::2, ::-1].asnumpy(), a_np[::2, ::-1])  # steps copy
    with pytest.raises(IndexError):
        a[np.array([0, 1], dtype="int64")]
    a[0] = 5
    a[1:] = np.full((1, 3, 4), 2.0)
    expected = onp.concatenate([onp.full((1, 3, 4), 5.0), onp.full((1, 3, 4), 2.0)])
    onp.testing.assert_array_equal(a.asnumpy(), expected)
    a[...] = onp.arange(4, dtype=onp.float32)  # broadcast, from numpy
    onp.testing.assert_array_equal(a.asnumpy()[1, 2], onp.arange(4))
    assert len(a) == 2 and [r.shape for r in a] == [(3, 4), (3, 4)]


def test_scalars_printing_and_conversions():
    x = np.array([[1.5, 2.0]])
    assert float(x[0, 0]) == 1.5 and int(np.array([3], dtype="int64")) == 3
    assert np.array([7], dtype="int64").item() == 7 and isinstance(x[0, 1].item(), float)
    assert bool(np.array([1.0])) and not bool(np.array([0.0]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    assert repr(x) == "array([[1.5, 2. ]], dtype=float32)"
    assert str(x) == "[[1.5 2. ]]"
    assert "device=cpu(1)" in repr(x.copyto(npx.cpu(1)))
    assert x.tolist() == [[1.5, 2.0]]
    assert onp.asarray(x).dtype == onp.float32 and onp.asarray(x, dtype=onp.float64).dtype == onp.float64
    h = np.array([1, 2], dtype="bfloat16").asnumpy()
    assert h.dtype == onp.float32 and h.tolist() == [1.0, 2.0]


def test_dlpack_exchange_shares_memory():
    x = np.arange(6).reshape(2, 3) + 1
    view = onp.from_dlpack(x)
    assert view.tolist() == [[1, 2, 3], [4, 5, 6]]
    x[0] = 42  # written by dlc, seen through numpy's view: the same memory
    x.wait_to_read()
    assert view[0].tolist() == [42, 42, 42]
    # numpy into dlc: aligned memory is shared, other memory copied; values equal either way.
    big = onp.arange(4096, dtype=onp.float32)
    y = np.from_dlpack(big)
    assert y.shape == (4096,) and float(y.sum()) == float(big.sum())
    if big.ctypes.data % 64 == 0:
        big[0] = 1000.0
        assert y[0].item() == 1000.0
    odd = onp.arange(10, dtype=onp.float32)[1:]  # an unaligned start: copied
    assert np.from_dlpack(odd).asnumpy().tolist() == odd.tolist()
    strided = onp.arange(12, dtype=onp.float32).reshape(3, 4)[:, ::2]
    assert np.from_dlpack(strided).asnumpy().tolist() == strided.tolist()
    with pytest.raises(TypeError):
        np.from_dlpack([1, 2])


def test_element_wise_ops_bind_themselves_from_the_registry():
    # erf, softrelu and hard_swish have no line in the Python bindings: every
    # element-wise op registered with a module is bound there under its name.
    import math
    x = np.array([-4.0, -1.0, 0.5, 2.0, 25.0])
    values = x.asnumpy().tolist()
    for name, definition in [
            ("erf", math.erf),
            ("softrelu", lambda t: t if t > 20 else math.log1p(math.exp(t))),
            ("hard_swish", lambda t: t * min(max(t + 3, 0), 6) / 6)]:
        got = getattr(npx, name)(x).asnumpy().tolist()
        for t, y in zip(values, got):
            assert abs(y - definition(t)) < 1e-5 * max(1, abs(y)), (name, t, y)
    # The activation layer knows MXNet's softrelu.
    assert abs(npx.activation(np.array([0.0]), act_type="softrelu").item() - math.log(2)) < 1e-6
