"""Datasets and the data loader (``gluon.data``)."""
from ... import _dlc
from ..._dlc.gluon.data import DataLoader, Dataset
from . import vision


class ArrayDataset(_dlc.gluon.data._ArrayDataset):
    """Rows of ``data`` along axis 0 with one integer label each: ``ArrayDataset(x, y)``."""

    def __init__(self, data, label):
        super().__init__(data, label)


class SimpleDataset(Dataset):
    """A list (or any sequence) of (data, label) pairs as a dataset."""

    def __init__(self, samples):
        super().__init__()
        self._samples = samples

    def __len__(self):
        return len(self._samples)

    def __getitem__(self, index):
        return self._samples[index]


class _TransformedDataset(Dataset):
    """``dataset.transform(fn)``: fn(data, label) -> (data, label), called per sample."""

    def __init__(self, base, fn):
        super().__init__()
        self._base, self._fn = base, fn

    def __len__(self):
        return len(self._base)

    def __getitem__(self, index):
        return self._fn(*self._base[index])


def _transform(self, fn, lazy=True):
    return _TransformedDataset(self, fn)


Dataset.transform = _transform

__all__ = ["Dataset", "ArrayDataset", "SimpleDataset", "DataLoader", "vision"]
