"""MXNet 1.9.1's results for the cases test_mxnet_parity.py describes; run with the
interpreter of bench/.venv (where mxnet is), never by the tests' own interpreter.

    bench/.venv/bin/python python/tests/mxnet_reference.py cases.json inputs.npz out.npz

Each case names a layer (or a loss, a Trainer step, split_and_load) and its inputs in
inputs.npz; out.npz gets "<case>/<name>" arrays: outputs, input and parameter gradients,
updated weights.
"""
import json
import sys

import mxnet as mx
import numpy as onp
from mxnet import autograd, gluon, np, npx
from mxnet.gluon import nn

npx.set_np()


def arr(inputs, key):
    return np.array(inputs[key], dtype=inputs[key].dtype)


def set_params(block, inputs, prefix, names):
    for name in names:
        getattr(block, name).set_data(arr(inputs, f"{prefix}/{name}"))


def layer_case(case, inputs, out):
    kind, p = case["kind"], case["name"]
    args = case.get("args", {})
    params = []
    if kind == "dense":
        block = nn.Dense(args["units"], activation=args.get("activation"), in_units=args["in_units"])
        params = ["weight", "bias"]
    elif kind == "conv":
        block = nn.Conv2D(args["channels"], args["kernel"], strides=args.get("strides", 1),
                          padding=args.get("padding", 0), activation=args.get("activation"),
                          in_channels=args["in_channels"])
        params = ["weight", "bias"]
    elif kind == "maxpool":
        block = nn.MaxPool2D(args["pool"], args.get("strides"), padding=args.get("padding", 0))
    elif kind == "avgpool":
        block = nn.AvgPool2D(args["pool"], args.get("strides"), padding=args.get("padding", 0))
    elif kind == "batchnorm":
        block = nn.BatchNorm(in_channels=args["in_channels"])
        params = ["gamma", "beta", "running_mean", "running_var"]
    elif kind == "activation":
        block = nn.Activation(args["activation"])
    elif kind == "flatten":
        block = nn.Flatten()
    block.initialize()
    x = arr(inputs, f"{p}/x")
    block(x)  # shapes
    set_params(block, inputs, p, params)
    x.attach_grad()
    with autograd.record(train_mode=case.get("train", True)):
        y = block(x)
    y.backward(arr(inputs, f"{p}/dy"))
    out[f"{p}/y"] = y.asnumpy()
    out[f"{p}/dx"] = x.grad.asnumpy()
    for name in params:
        parameter = getattr(block, name)
        if parameter.grad_req != "null":
            out[f"{p}/d{name}"] = parameter.grad().asnumpy()
        out[f"{p}/after_{name}"] = parameter.data().asnumpy()


def softmax_ce_case(case, inputs, out):
    p = case["name"]
    pred, label = arr(inputs, f"{p}/pred"), arr(inputs, f"{p}/label")
    pred.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(pred, label)
    loss.backward()
    out[f"{p}/loss"] = loss.asnumpy()
    out[f"{p}/dpred"] = pred.grad.asnumpy()


def trainer_case(case, inputs, out):
    p, args = case["name"], case["args"]
    net = nn.HybridSequential()
    net.add(nn.Dense(args["hidden"], activation="relu", in_units=args["in_units"]),
            nn.Dense(args["classes"], in_units=args["hidden"]))
    net.initialize()
    for k, layer in enumerate(net):
        set_params(layer, inputs, f"{p}/{k}", ["weight", "bias"])
    trainer = gluon.Trainer(net.collect_params(), args["optimizer"], args["options"])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, label = arr(inputs, f"{p}/x"), arr(inputs, f"{p}/label")
    for _ in range(args["steps"]):
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        trainer.step(x.shape[0])
    for k, layer in enumerate(net):
        out[f"{p}/{k}/weight"] = layer.weight.data().asnumpy()
        out[f"{p}/{k}/bias"] = layer.bias.data().asnumpy()


def split_case(case, inputs, out):
    p, args = case["name"], case["args"]
    data = arr(inputs, f"{p}/data")
    devices = [mx.cpu(k) for k in range(args["devices"])]
    try:
        parts = gluon.utils.split_and_load(data, devices, batch_axis=args["batch_axis"],
                                           even_split=args["even_split"])
        for k, part in enumerate(parts):
            out[f"{p}/part{k}"] = part.asnumpy()
        out[f"{p}/count"] = onp.array(len(parts))
    except ValueError:
        out[f"{p}/error"] = onp.array(1)


def main():
    cases = json.load(open(sys.argv[1]))
    inputs = dict(onp.load(sys.argv[2]))
    out = {}
    for case in cases:
        {"softmax_ce": softmax_ce_case, "trainer": trainer_case,
         "split": split_case}.get(case["kind"], layer_case)(case, inputs, out)
    onp.savez(sys.argv[3], **out)


if __name__ == "__main__":
    main()
