"""Initializers (``mx.init``): ``net.initialize(init.Xavier())`` or by name ('xavier')."""
from ._dlc.init import Constant, Initializer, Normal, One, Uniform, Xavier, Zero

Zeros, Ones = Zero, One

__all__ = ["Initializer", "Uniform", "Normal", "Constant", "Zero", "One", "Zeros", "Ones",
           "Xavier"]
