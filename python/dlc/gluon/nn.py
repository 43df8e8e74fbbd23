"""Layers (``gluon.nn``). Input sizes (in_channels, in_units) are inferred at the first
call, as Gluon's deferred initialization does; layers take NCHW input."""
from .. import _dlc
from .._dlc.gluon.nn import (ELU, GELU, SELU, Activation, AvgPool2D, BatchNorm, Conv2D,
                             Conv2DTranspose, Dense, Embedding,
                             Dropout, Flatten, GlobalAvgPool2D, GlobalMaxPool2D, GroupNorm,
                             HardSigmoid, HardSwish, Identity, InstanceNorm, LayerNorm, LeakyReLU,
                             MaxPool2D, MultiHeadAttention, PReLU, ReflectionPad2D, SiLU, Swish,
                             TransformerDecoderLayer, TransformerEncoderLayer, UpSampling2D)
from . import mxnet1
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


def _lambda_function(function, kind):
    """MXNet's Lambda/HybridLambda argument: an operator's name, or a function."""
    if isinstance(function, str):
        op = getattr(mxnet1.F, function)  # AttributeError names an unknown one
        return lambda F, *args: op(*args)
    if not callable(function):
        raise ValueError(f"{kind}: expected an operator's name or a function, got "
                         f"{type(function).__name__}")
    return function


class HybridLambda(HybridBlock):
    """Wraps ``function(F, x, *args)`` (or the name of an F operator, ``'tanh'``) as a
    block, MXNet's ``HybridLambda``; hybridized, it is traced like any forward."""

    def __init__(self, function, prefix=None):
        super().__init__()
        self._function = _lambda_function(function, "HybridLambda")

    def forward(self, *args):
        return self._function(mxnet1.F, *args)


class Lambda(Block):
    """Wraps ``function(x, *args)`` (or the name of an np/npx function) as a block,
    MXNet's ``Lambda``; it is never hybridized."""

    def __init__(self, function, prefix=None):
        super().__init__()
        wrapped = _lambda_function(function, "Lambda")
        self._function = wrapped if isinstance(function, str) else (
            lambda F, *args: function(*args))

    def forward(self, *args):
        return self._function(mxnet1.F, *args)

__all__ = ["Block", "HybridBlock", "Sequential", "HybridSequential", "HybridConcatenate",
           "HybridConcurrent", "Conv2D", "Conv2DTranspose", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D",
           "GlobalMaxPool2D", "BatchNorm", "Dense", "Dropout", "Flatten", "Activation", "Identity",
           "LeakyReLU", "PReLU", "ELU", "SELU", "GELU", "Swish", "SiLU", "HardSigmoid", "HardSwish",
           "LayerNorm", "InstanceNorm", "GroupNorm", "HybridLambda", "Lambda", "UpSampling2D",
           "ReflectionPad2D", "Embedding", "MultiHeadAttention", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]
