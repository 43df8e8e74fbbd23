"""Recording and gradients (MXNet's ``mxnet.autograd``)::

    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
"""
from ._dlc.autograd import _train_mode, backward, is_recording, is_training, pause, record


def train_mode():
    """``with autograd.train_mode():`` — is_training() is True inside, recording unchanged."""
    return _train_mode(True)


def predict_mode():
    """``with autograd.predict_mode():`` — is_training() is False inside."""
    return _train_mode(False)


__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "backward"]
