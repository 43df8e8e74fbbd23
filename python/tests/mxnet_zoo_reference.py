"""MXNet 1.9.1's model-zoo networks with random weights, for test_model_zoo.py and the
committed fixtures; run with the interpreter of bench/.venv (where mxnet is), never by the
tests' own interpreter.

    bench/.venv/bin/python python/tests/mxnet_zoo_reference.py OUT_DIR CLASSES NAME...

For each NAME (MXNet's model-zoo name) OUT_DIR gets NAME.params (MXNet's save_parameters:
Xavier weights, batch norms with random gamma, beta and running statistics, so that every
norm computes something) and NAME.output.params (nd.save of {"output": MXNet's prediction
for zoo_input(NAME)}), and counts.json the parameter counts. The committed fixtures
(unittests/Gluon/Inputs/mxnet/zoo: mobilenet0.25 and squeezenet1.1, 10 classes) were
written by `... mxnet_zoo_reference.py unittests/Gluon/Inputs/mxnet/zoo 10 mobilenet0.25
squeezenet1.1` (counts.json left out).
"""
import json
import os
import sys

import mxnet as mx
import numpy as onp
from mxnet.gluon.model_zoo import vision


def zoo_input(name):
    """The batch both sides predict: 2 images at the network's size, from a formula (so
    that no input file is needed), sin(0.37 i) over the flat index i."""
    size = 299 if name.startswith("inception") else 224
    return onp.sin(0.37 * onp.arange(2 * 3 * size * size)).reshape(2, 3, size, size).astype(onp.float32)


def main():
    out_dir, classes, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    counts = {}
    for name in names:
        mx.random.seed(7)
        rng = onp.random.RandomState(7)
        net = vision.get_model(name, classes=classes)
        net.initialize(mx.init.Xavier())
        x = zoo_input(name)
        net(mx.nd.array(x))  # shapes the deferred parameters
        for pname, p in net.collect_params().items():
            shape = p.shape
            if pname.endswith("gamma"):
                p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, shape)))
            elif pname.endswith("beta") or pname.endswith("running_mean"):
                p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, shape)))
            elif pname.endswith("running_var"):
                p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, shape)))
        y = net(mx.nd.array(x)).asnumpy()
        net.save_parameters(os.path.join(out_dir, name + ".params"))
        mx.nd.save(os.path.join(out_dir, name + ".output.params"), {"output": mx.nd.array(y)})
        counts[name] = int(sum(p.data().size for p in net.collect_params().values()))
        print(name, counts[name], y.shape, flush=True)
    with open(os.path.join(out_dir, "counts.json"), "w") as f:
        json.dump(counts, f, indent=1)


if __name__ == "__main__":
    main()
