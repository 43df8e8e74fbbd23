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

MXNet 1.x blocks (``hybrid_forward(self, F, x, ...)``, ``self.params.get``, ``name_scope``,
``prefix=``) run as they are: see ``mxnet1.py``.
"""
from .. import _dlc
from .._dlc.gluon import Block as _Block
from .._dlc.gluon import HybridBlock as _HybridBlock
from . import mxnet1
from .parameter import ParameterDict


class _Registering:
    """What Block and HybridBlock add in Python: attribute registration and collect_params."""

    def __setattr__(self, name, value):
        if isinstance(value, _dlc.gluon.Block):
            self._keep(value)
            if self._child(name) is not None:
                self._replace_child(name, value)
            else:
                self.register_child(value, name)
        elif isinstance(value, _dlc.gluon.Parameter):
            # One made by self.params.get (MXNet 1.x) is registered already.
            if not any(value is p for p in self.__dict__.get("_own_params", {}).values()):
                self._register_parameter(name, value)
        object.__setattr__(self, name, value)

    def _keep(self, block):
        # C++ holds children by shared pointer, which does not keep a Python subclass's
        # own attributes alive: the Python parent does.
        kept = self.__dict__.setdefault("_children_kept", [])
        kept.append(block)



def _collect_params(self, select=None):
    """The parameters of the block and its children by path ("features.0.weight"), in
    registration order; ``select`` is a regular expression searched in each name."""
    return ParameterDict(self._collect_params(select))


def _child_attribute(self, name):
    """A child by its name (``net.features``, ``net.output`` of a model-zoo network)."""
    if not name.startswith("_"):
        child = self._child(name)
        if child is not None:
            return child
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _set_child_attribute(self, name, value):
    """``net.output = nn.Dense(10)`` on a block made in C++ (a model-zoo network)."""
    if isinstance(value, _dlc.gluon.Block) and self._child(name) is not None:
        self._replace_child(name, value)
        return
    object.__setattr__(self, name, value)


# Every block has them, the C++ layers included.
_Block.__getattr__ = _child_attribute
_Block.__setattr__ = _set_child_attribute
_Block.collect_params = _collect_params
_Block.params = property(lambda self: mxnet1.BlockParams(self, self._collect_params(None)))
_Block.summary = lambda self, *inputs: print(repr(self))
_Block.name_scope = lambda self: mxnet1.name_scope()


def _forward(self, *args):
    if hasattr(type(self), "hybrid_forward"):
        return mxnet1.call_hybrid_forward(self, *args)
    raise NotImplementedError(f"{type(self).__name__} must define forward() (or MXNet 1.x's "
                              f"hybrid_forward(self, F, x, ...))")


class Block(_Registering, _Block):
    """A layer or a network (``gluon.Block``); subclass it and write ``forward``, or MXNet
    1.x's ``hybrid_forward``. ``prefix`` and ``params`` (MXNet 1.x) are accepted: names
    are paths."""

    def __init__(self, prefix=None, params=None):
        _Block.__init__(self)

    forward = _forward


class HybridBlock(_Registering, _HybridBlock):
    """A block ``hybridize()`` compiles (``gluon.HybridBlock``)."""

    def __init__(self, prefix=None, params=None):
        _HybridBlock.__init__(self)

    forward = _forward
