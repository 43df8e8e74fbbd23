"""``gluon.utils``: splitting a batch over devices."""
from .. import _dlc


def split_and_load(data, ctx_list=None, batch_axis=0, even_split=True, device_list=None):
    """Cuts ``data`` along ``batch_axis`` into one slice per device and moves each there.

    A batch that does not divide evenly raises ValueError unless ``even_split=False`` (then
    slices differ by at most one sample), as in MXNet."""
    devices = device_list if device_list is not None else ctx_list
    if devices is None:
        raise _dlc.ValueError("split_and_load: give the devices (ctx_list or device_list)")
    if isinstance(devices, _dlc.Device):
        devices = [devices]
    devices = list(devices)
    if not isinstance(data, _dlc.ndarray):
        data = _dlc.np.array(data, device=devices[0])
    if len(devices) > 1:
        _check_split(data, len(devices), batch_axis, even_split)
    return _dlc.gluon.utils._split_and_load(data, devices, batch_axis, even_split)


def _check_split(data, num_slice, batch_axis, even_split):
    """MXNet's checks and messages (before dlc's own)."""
    if not -len(data.shape) <= batch_axis < len(data.shape):
        raise _dlc.ValueError(
            f"batch_axis {batch_axis} is out of range for data of shape "
            f"{data.shape} ({len(data.shape)} axes); the samples lie along one of axes "
            f"{-len(data.shape)} to {len(data.shape) - 1}")
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise _dlc.ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices "
            f"along axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            "even_split=False to allow uneven partitioning of data.")
    if size < num_slice:
        raise _dlc.ValueError(
            f"Too many slices for data with shape {data.shape}. Arguments are "
            f"num_slice={num_slice} and batch_axis={batch_axis}.")


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Cuts ``data`` into ``num_slice`` slices along ``batch_axis`` on its own device."""
    _check_split(data, num_slice, batch_axis, even_split)
    size = data.shape[batch_axis]
    step, extra = divmod(size, num_slice)
    sizes = [step + (1 if k < extra else 0) for k in range(num_slice)]
    points, at = [], 0
    for s in sizes[:-1]:
        at += s
        points.append(at)
    from .. import np
    return np.split(data, points, axis=batch_axis)


__all__ = ["split_and_load", "split_data"]
