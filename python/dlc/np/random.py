"""Random arrays (``mxnet.np.random``), drawn from each device's own generator."""
from .._dlc.np.random import normal, randint, seed, uniform

__all__ = ["seed", "uniform", "normal", "randint"]
