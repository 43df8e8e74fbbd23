"""Layers (``gluon.nn``). Input sizes (in_channels, in_units) are inferred at the first
call, as Gluon's deferred initialization does; layers take NCHW input."""
from .. import _dlc
from .._dlc.gluon.nn import (Activation, AvgPool2D, BatchNorm, Conv2D, Dense, Dropout, Flatten,
                             GlobalAvgPool2D, GlobalMaxPool2D, Identity, MaxPool2D)
from .block import Block, HybridBlock


class _Container:
    def add(self, *blocks):
        for block in blocks:
            self.__dict__.setdefault("_children_kept", []).append(block)
            self._add(block)
        return self

    def __getitem__(self, index):
        kept = self.__dict__.get("_children_kept", [])
        return kept[index]


class Sequential(_Container, _dlc.gluon.Sequential):
    """Children run in order, named "0", "1", ..."""


class HybridSequential(_Container, _dlc.gluon.HybridSequential):
    """Children run in order, named "0", "1", ...; hybridize() compiles them as one."""


class HybridConcatenate(_Container, _dlc.gluon.HybridConcatenate):
    """Runs every child on the input and concatenates their outputs along ``axis``
    (children named "0", "1", ...)."""


HybridConcurrent = HybridConcatenate  # MXNet 1.x's name (mxnet.gluon.contrib.nn)

__all__ = ["Block", "HybridBlock", "Sequential", "HybridSequential", "HybridConcatenate",
           "HybridConcurrent", "Conv2D", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D",
           "GlobalMaxPool2D", "BatchNorm", "Dense", "Dropout", "Flatten", "Activation", "Identity"]
