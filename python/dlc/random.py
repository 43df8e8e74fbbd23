"""``mx.random.seed``: seeds every device's generator (or one device's)."""
from ._dlc.np.random import normal, randint, seed, uniform

__all__ = ["seed", "uniform", "normal", "randint"]
