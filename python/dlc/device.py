"""Devices: ``dlc.cpu(i)``, ``dlc.gpu(i)``; ``with dlc.gpu(0):`` sets this thread's default
device, as ``with mx.gpu(0):`` does."""
from ._dlc import Device, cpu, cpu_pinned, current_device, gpu, num_gpus

Context = Device
current_context = current_device

__all__ = ["Device", "Context", "cpu", "gpu", "cpu_pinned", "num_gpus", "current_device",
           "current_context"]
