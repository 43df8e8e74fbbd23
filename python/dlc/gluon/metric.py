"""Metrics (``gluon.metric``)."""
from .. import _dlc


class Accuracy:
    """The fraction of samples whose predicted class (argmax over ``axis``) is the label."""

    def __init__(self, axis=1, name="accuracy"):
        if axis != 1:
            raise _dlc.UnsupportedError("Accuracy: axis must be 1")
        self.name = name
        self._impl = _dlc.gluon.metric._Accuracy()

    def update(self, labels, preds):
        if not isinstance(labels, (list, tuple)):
            labels = [labels]
        if not isinstance(preds, (list, tuple)):
            preds = [preds]
        if len(labels) != len(preds):
            raise _dlc.ValueError(
                f"Accuracy.update: {len(labels)} label arrays and {len(preds)} predictions")
        self._impl.update(list(labels), list(preds))

    def get(self):
        return self.name, self._impl.get()[1]

    def get_name_value(self):
        return [self.get()]

    def reset(self):
        self._impl.reset()

    @property
    def num_inst(self):
        return self._impl.num_inst

    @property
    def sum_metric(self):
        """The correct predictions so far (MXNet's EvalMetric.sum_metric)."""
        return self._impl.sum_metric

    def __repr__(self):
        return f"EvalMetric: {dict([self.get()])}"


__all__ = ["Accuracy"]
