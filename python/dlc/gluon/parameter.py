"""Parameters (``gluon.Parameter``) and dicts of them (``collect_params()``)."""
from .. import _dlc
from .._dlc.gluon import Parameter


class ParameterDict(dict):
    """Parameters by path, in registration order: a dict, as MXNet 2's collect_params()
    returns, with the helpers scripts call on it."""

    def initialize(self, init=None, device=None, verbose=False, force_reinit=False, ctx=None):
        for p in self.values():
            p.initialize(init=init, device=device if device is not None else ctx,
                         force_reinit=force_reinit)

    def zero_grad(self):
        for p in self.values():
            p.zero_grad()

    def reset_device(self, device):
        for p in self.values():
            p.reset_device(device)

    reset_ctx = reset_device

    def setattr(self, name, value):
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename):
        _dlc.save_arrays(filename, {name: p.data() for name, p in self.items()})


__all__ = ["Parameter", "ParameterDict"]
