"""MXNet's Gluon model zoo (``gluon.model_zoo``): the vision networks."""
from . import vision

__all__ = ["vision"]
