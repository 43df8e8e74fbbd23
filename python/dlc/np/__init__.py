"""numpy-style arrays and ops on dlc's devices (MXNet's ``mxnet.np``).

Arrays are ``dlc.np.ndarray``; ops return at once and run on their inputs' device. Creation
functions take ``device=`` (default: the current device scope). dlc has no float64: numpy
float64 input becomes float32, as does Python's float.
"""
import numpy as _onp

from .. import _dlc
from .._dlc import from_dlpack, ndarray
# Every function the extension binds in np, the element-wise ops included (they bind
# themselves from dlc's op registry, so a new one appears here with no line of its own).
from .._dlc.np import *  # noqa: F401,F403
from . import random

float16, float32, int32, int64, uint8 = (_onp.float16, _onp.float32, _onp.int32, _onp.int64,
                                         _onp.uint8)
bool_ = _onp.bool_
float64 = _onp.float64  # accepted as a dtype; arrays are made float32
pi, e, inf, nan = _onp.pi, _onp.e, _onp.inf, _onp.nan
newaxis = None


def zeros_like(a, dtype=None, device=None):
    return zeros(a.shape, dtype=dtype or a.dtype, device=device or a.device)


def ones_like(a, dtype=None, device=None):
    return ones(a.shape, dtype=dtype or a.dtype, device=device or a.device)


def full_like(a, fill_value, dtype=None, device=None):
    return full(a.shape, fill_value, dtype=dtype or a.dtype, device=device or a.device)


def abs(x):
    return maximum(x, negative(x))


absolute = abs


def square(x):
    return multiply(x, x)


def clip(a, a_min, a_max):
    out = a
    if a_min is not None:
        out = maximum(out, a_min)
    if a_max is not None:
        out = minimum(out, a_max)
    return out


def expand_dims(a, axis):
    shape = list(a.shape)
    axis = axis if axis >= 0 else axis + len(shape) + 1
    shape.insert(axis, 1)
    return a.reshape(shape)


def squeeze(a, axis=None):
    if axis is None:
        return a.reshape([d for d in a.shape if d != 1])
    axes = {ax % a.ndim for ax in ((axis,) if isinstance(axis, int) else axis)}
    for ax in axes:
        if a.shape[ax] != 1:
            raise _dlc.ValueError(
                "squeeze: cannot select an axis to squeeze out which has size not equal to "
                f"one (axis {ax} of shape {a.shape})")
    return a.reshape([d for k, d in enumerate(a.shape) if k not in axes])


def ravel(a):
    return a.reshape(-1)


def stack(arrays, axis=0):
    arrays = list(arrays)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


def sigmoid(x):  # not numpy's, but MXNet scripts reach for it here too
    return _dlc.npx.sigmoid(x)


def shape(a):
    return a.shape


def size(a):
    return a.size


def ndim(a):
    return a.ndim
