"""Image transforms (``gluon.data.vision.transforms``); Compose also takes Python callables."""
from ...._dlc.gluon.data.vision.transforms import (CenterCrop, Compose, Normalize,
                                                   RandomColorJitter, RandomFlipLeftRight,
                                                   RandomResizedCrop, Resize, ToTensor,
                                                   Transform)

__all__ = ["Compose", "Resize", "CenterCrop", "RandomResizedCrop", "RandomFlipLeftRight",
           "RandomColorJitter", "ToTensor", "Normalize", "Transform"]
