"""dlc: MXNet Gluon's Python API on dlc's C++ core and MLIR compiler.

A Gluon script moves to dlc by changing its imports::

    from dlc import np, npx, gluon, autograd   # was: from mxnet import ...
    import dlc as mx                            # mx.cpu(), mx.gpu(), mx.random.seed

docs/from-mxnet.md (in the repository) lists what differs.
"""
from . import _dlc
from .base import DLCError, MXNetError
from .device import Device, cpu, cpu_pinned, current_device, gpu, num_gpus
from . import np, npx, autograd, initializer, random, gluon, dist, onnx
from ._dlc import CompiledModel

from . import device as context  # mx.context.cpu() reads as before

init = initializer

__version__ = "0.1.0"
__all__ = ["np", "npx", "autograd", "gluon", "dist", "onnx", "init", "initializer", "random", "Device",
           "cpu", "gpu", "cpu_pinned", "num_gpus", "current_device", "CompiledModel",
           "DLCError", "MXNetError"]
