"""Losses (``gluon.loss``): called as ``loss(pred, label)``, one value per sample."""
from .. import _dlc


class Loss:
    def __init__(self, weight=None, batch_axis=0):
        if batch_axis != 0:
            raise _dlc.UnsupportedError("loss: batch_axis must be 0")
        self._weight = weight

    def __call__(self, pred, label, sample_weight=None):
        out = self._impl(pred, label)
        if self._weight is not None and self._weight != 1:
            out = out * self._weight
        if sample_weight is not None:
            out = out * sample_weight
        return out

    def __repr__(self):
        return type(self).__name__ + "()"


class SoftmaxCrossEntropyLoss(Loss):
    """Softmax cross entropy of logits (N, C) against class indices (N) (sparse_label) or
    distributions (N, C); with from_logits, pred already holds log-probabilities."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0):
        super().__init__(weight, batch_axis)
        self._impl = _dlc.gluon.loss._SoftmaxCrossEntropyLoss(axis, sparse_label, from_logits)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class L2Loss(Loss):
    """0.5 * mean((pred - label)**2) over the non-batch axes, per sample."""

    def __init__(self, weight=1.0, batch_axis=0):
        super().__init__(weight, batch_axis)
        self._impl = _dlc.gluon.loss._L2Loss()


__all__ = ["Loss", "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "L2Loss"]
