"""Blocks written in Python (MXNet 2's Gluon): children and parameters assigned to
attributes are registered under the attribute's name, so that ``collect_params()`` names
them by path ("features.0.weight") as MXNet does::

    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(8, 3)
            self.out = nn.Dense(10)

        def forward(self, x):
            return self.out(self.conv(x))

``hybridize()`` traces ``forward`` into the dlc dialect the first time the block is called
with a new input signature; forward must not read array values then.
"""
from .. import _dlc
from .._dlc.gluon import Block as _Block
from .._dlc.gluon import HybridBlock as _HybridBlock
from .parameter import ParameterDict


class _Registering:
    """What Block and HybridBlock add in Python: attribute registration and collect_params."""

    def __setattr__(self, name, value):
        if isinstance(value, _dlc.gluon.Block):
            self._keep(value)
            self.register_child(value, name)
        elif isinstance(value, _dlc.gluon.Parameter):
            self._register_parameter(name, value)
        super().__setattr__(name, value)

    def _keep(self, block):
        # C++ holds children by shared pointer, which does not keep a Python subclass's
        # own attributes alive: the Python parent does.
        kept = self.__dict__.setdefault("_children_kept", [])
        kept.append(block)



def _collect_params(self, select=None):
    """The parameters of the block and its children by path ("features.0.weight"), in
    registration order; ``select`` is a regular expression searched in each name."""
    return ParameterDict(self._collect_params(select))


# Every block has them, the C++ layers included.
_Block.collect_params = _collect_params
_Block.params = property(_collect_params)
_Block.summary = lambda self, *inputs: print(repr(self))


class Block(_Registering, _Block):
    """A layer or a network (``gluon.Block``); subclass it and write ``forward``."""

    def __init__(self):
        _Block.__init__(self)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")


class HybridBlock(_Registering, _HybridBlock):
    """A block ``hybridize()`` compiles (``gluon.HybridBlock``)."""

    def __init__(self):
        _HybridBlock.__init__(self)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")
