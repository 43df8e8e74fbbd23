"""Image datasets and transforms (``gluon.data.vision``). Images are HWC uint8 arrays until
``transforms.ToTensor()`` makes them CHW float32 in [0, 1]."""
from .... import _dlc
from . import transforms

_vision = _dlc.gluon.data.vision


def _with_transform(dataset, transform):
    if transform is None:
        return dataset
    from .. import _TransformedDataset
    return _TransformedDataset(dataset, transform)


def MNIST(root="/usr/share/datasets/mnist", train=True, transform=None):
    """MNIST from IDX files (optionally gzipped) under ``root``; dlc does not download."""
    return _with_transform(_vision._MNIST(root, train), transform)


def FashionMNIST(root="/usr/share/datasets/fashion-mnist", train=True, transform=None):
    """Fashion-MNIST, by default from Debian's dataset-fashion-mnist package."""
    return _with_transform(_vision._FashionMNIST(root, train), transform)


def ImageFolderDataset(root, flag=1, transform=None, skip_unreadable=False):
    """Images in one folder per class (JPEG, PNG, BMP); labels follow the sorted names."""
    return _with_transform(_vision._ImageFolderDataset(root, flag, skip_unreadable), transform)





save_image = _vision.save_image
__all__ = ["MNIST", "FashionMNIST", "ImageFolderDataset", "transforms", "save_image"]
