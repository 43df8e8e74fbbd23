"""``gluon.Trainer``: an optimizer over parameters that may have a copy on several devices."""
from .. import _dlc


class Trainer:
    """Applies ``optimizer`` ('sgd', 'nag' or 'adam') to ``params``.

    ``step(batch_size)`` sums each parameter's gradients over its devices, scales them by
    1/batch_size and updates every copy. ``optimizer_params``: learning_rate, momentum, wd,
    clip_gradient, beta1, beta2, epsilon (and rescale_grad, folded into the scale).
    ``kvstore`` is accepted: dlc reduces on the devices themselves ('device').
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if not isinstance(optimizer, str):
            raise _dlc.UnsupportedError(
                f"Trainer: optimizer must be a name ('sgd', 'nag', 'adam'), got {optimizer!r}")
        if kvstore not in (None, "device", "local"):
            raise _dlc.UnsupportedError(
                f"Trainer: kvstore {kvstore!r} is not supported (dlc reduces across devices "
                "itself; see dlc's multi-process training for several machines)")
        options = {k: float(v) for k, v in (optimizer_params or {}).items()}
        if isinstance(params, dict):
            items = params
        else:
            items = {p.name: p for p in params}
        self._params = dict(items)
        self._impl = _dlc.gluon._Trainer(items, optimizer, options)

    def step(self, batch_size, ignore_stale_grad=False):
        self._impl.step(int(batch_size), ignore_stale_grad)

    @property
    def learning_rate(self):
        return self._impl.learning_rate

    def set_learning_rate(self, lr):
        self._impl.set_learning_rate(float(lr))

    @property
    def optimizer(self):
        return self._impl.optimizer

    def save_states(self, fname):
        """Writes the optimizer's state (momentum, Adam's moments, the count of updates)
        to ``fname``: with the parameters, what a resumed run needs to go on exactly."""
        self._impl.save_states(str(fname))

    def load_states(self, fname):
        """Reads states ``save_states`` (or ``TrainStep.save_states``) wrote, checked
        against this trainer's optimizer and parameters before anything changes."""
        self._impl.load_states(str(fname))

    def zero_grad(self):
        for p in self._params.values():
            p.zero_grad()


__all__ = ["Trainer"]
