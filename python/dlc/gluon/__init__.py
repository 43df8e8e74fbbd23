"""Gluon: blocks, parameters, Trainer, losses, metrics and data (MXNet's ``mxnet.gluon``)."""
from .block import Block, HybridBlock
from .parameter import Parameter, ParameterDict
from .trainer import Trainer
from .._dlc.gluon import TrainStep
from . import nn, loss, metric, utils, data, model_zoo

__all__ = ["Block", "HybridBlock", "Parameter", "ParameterDict", "Trainer", "TrainStep", "nn",
           "loss", "metric", "utils", "data", "model_zoo"]
