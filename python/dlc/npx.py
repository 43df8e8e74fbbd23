"""Neural-network ops and device helpers (MXNet's ``mxnet.npx``)."""
from . import _dlc
from ._dlc import cpu, cpu_pinned, current_device, gpu, num_gpus
# Every function the extension binds in npx, the element-wise ops included (they bind
# themselves from dlc's op registry).
from ._dlc.npx import *  # noqa: F401,F403
from . import random

_np_semantics = True


def set_np(shape=True, array=True, dtype=False):
    """Accepted for MXNet scripts: dlc always has numpy semantics."""
    if not (shape and array):
        raise NotImplementedError("dlc has numpy semantics only (set_np(shape=True, array=True))")


def reset_np():
    """Accepted for MXNet scripts; dlc keeps numpy semantics."""


def is_np_array():
    return True


def is_np_shape():
    return True


def load(file, device=None):
    """The arrays of a safetensors file, or of a .params file MXNet saved, by name."""
    return _dlc.load_arrays(file, device)


def save(file, arr):
    """Writes a dict of arrays (or one array, named '0') as a safetensors file."""
    if not isinstance(arr, dict):
        arr = {str(k): a for k, a in enumerate(arr)} if isinstance(arr, (list, tuple)) else {"0": arr}
    _dlc.save_arrays(file, arr)


current_context = current_device
