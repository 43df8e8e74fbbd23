"""MXNet's Gluon model zoo (``gluon.model_zoo``): the vision networks, and BERT and GPT-2."""
from . import text, vision

__all__ = ["text", "vision"]
