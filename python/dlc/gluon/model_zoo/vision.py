"""MXNet 1.9.1's vision networks (``gluon.model_zoo.vision``), with MXNet's structure and
parameter names, so that ``load_parameters`` reads the ``.params`` files MXNet saved.

    net = vision.get_model("resnet50_v1", classes=10)
    net = vision.resnet50_v1(pretrained=True)   # MXNet's file, from ~/.mxnet/models

``vit_b_16`` (a ``VisionTransformer``) is not in MXNet 1.9.1; its weights load from a
Hugging Face checkpoint with ``model_zoo.text.from_pretrained(folder)``.
"""
from ..._dlc.gluon.model_zoo.vision import (VisionTransformer, get_model, model_names,
                                            mxnet_model_names, pretrained_file)


def _constructor(name):
    def make(classes=1000, pretrained=False, root="", image_size=0):
        return get_model(name, classes=classes, pretrained=pretrained, root=root,
                         image_size=image_size)
    make.__name__ = name.replace(".", "_")
    make.__doc__ = f"get_model({name!r}, ...)"
    return make


# MXNet's constructor functions: resnet50_v1, mobilenet0_25, mobilenet_v2_1_0, ...
for _name in model_names():
    _function = _name.replace(".", "_")
    if _name.startswith("mobilenetv2_"):
        _function = "mobilenet_v2_" + _name[len("mobilenetv2_"):].replace(".", "_")
    elif _name == "inceptionv3":
        _function = "inception_v3"
    globals()[_function] = _constructor(_name)

_BOUND = ("VisionTransformer", "get_model", "model_names", "mxnet_model_names",
          "pretrained_file")
__all__ = list(_BOUND) + [n for n in list(globals()) if n not in _BOUND
                          and not n.startswith("_") and callable(globals()[n])]
