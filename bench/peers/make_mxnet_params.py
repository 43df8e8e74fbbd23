"""Writes the MXNet-saved parameter files the C++ tests read
(unittests/Gluon/Inputs/mxnet/), with MXNet 1.9.1 from bench/.venv:

    bench/.venv/bin/python bench/peers/make_mxnet_params.py unittests/Gluon/Inputs/mxnet

- tiny_net.params: Gluon's save_parameters of a small network (3x3 convolution with 4
  filters and ReLU, batch norm, dense 3), trained one SGD step so that the running
  statistics are not their defaults; tiny_net_io.params: an input batch and MXNet's
  output for it (predicting), so that dlc's forward is compared with MXNet's.
- dtypes.params: nd.save of a dict of float16, int32, int64 and uint8 arrays.
- list.params: nd.save of a list (no names).
- np_shapes.params: the network's parameters saved with numpy shape semantics on
  (npx.set_np), which writes MXNet 2's array magic, with a 0-d scalar beside them.
The files are small and checked in; CI never runs this script.
"""
import os
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn


def tiny_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    return net


def main(out):
    os.makedirs(out, exist_ok=True)
    mx.random.seed(3)
    np.random.seed(3)
    net = tiny_net()
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.uniform(-1, 1, (2, 1, 6, 6)).astype(np.float32))
    label = nd.array([0, 2])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        l = loss(net(x), label)
    l.backward()
    trainer.step(2)
    net.save_parameters(os.path.join(out, "tiny_net.params"))
    nd.save(os.path.join(out, "tiny_net_io.params"), {"input": x, "output": net(x)})

    nd.save(os.path.join(out, "dtypes.params"), {
        "half": nd.array([1.5, -2.25, 65504.0], dtype="float16"),
        "int32": nd.array([[1, -2], [3, 2147483647]], dtype="int32"),
        "int64": nd.array([-(2 ** 40), 7], dtype="int64"),
        "uint8": nd.array([0, 255, 17], dtype="uint8"),
    })
    nd.save(os.path.join(out, "list.params"), [nd.array([1.0, 2.0]), nd.array([[3.0]])])

    mx.npx.set_np()
    params = {name: p.data().as_np_ndarray()
              for name, p in net._collect_params_with_prefix().items()}
    params["scalar"] = mx.np.array(4.5)
    mx.npx.save(os.path.join(out, "np_shapes.params"), params)
    print("wrote", sorted(os.listdir(out)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "unittests/Gluon/Inputs/mxnet")
