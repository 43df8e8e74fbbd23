"""dlc driven from Python, for bench/compare-python.py: the per-op cost (small_op_x100:
100 dependent adds of 4-element arrays) and the LeafNetwork training step three ways on
cpu(0)+cpu(1), as build/bin/dlc-bench-trainstep runs them from C++ (same network, batch,
optimizer and devices), one JSON line each.

    PYTHONPATH=build/python python3 bench/peers/dlc_python.py [batch] [repeats] [--ops-only]
"""
import importlib.util
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "python"))

import dlc  # noqa: E402
from dlc import autograd, gluon, np, npx  # noqa: E402
from leafnet import LeafNetwork  # noqa: E402  (examples/python/leafnet.py, the tutorial's)

# The peers' report and median_time (bench/peers/leafnet.py, another module of that name).
_spec = importlib.util.spec_from_file_location("peers_leafnet", os.path.join(here, "leafnet.py"))
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)


def report(bench, batch, seconds):
    peers.report("dlc-python", bench, batch, seconds)


def median_time(work, warmup, repeats):
    return peers.median_time(work, npx.waitall, warmup, repeats)


def main():
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    batch = int(numbers[0]) if numbers else 32
    repeats = int(numbers[1]) if len(numbers) > 1 else 5
    devices = [npx.cpu(0), npx.cpu(1)]

    small = np.random.uniform(-1, 1, size=(4,))
    increment = np.ones((4,))

    def small_ops():
        acc = small
        for _ in range(100):
            acc = acc + increment
    report("small_op_x100", batch, median_time(small_ops, 10, 50))
    if "--ops-only" in sys.argv:
        return

    np.random.seed(0)
    images = np.random.uniform(-1, 1, size=(batch, 3, 128, 128))
    labels = np.random.randint(0, 2, size=(batch,))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for mode in ["seed_loop_eager", "seed_loop_hybrid", "train_step"]:
        net = LeafNetwork()
        net.initialize(dlc.init.Xavier(), device=devices)
        with autograd.pause():
            net(np.zeros((1, 3, 128, 128), device=devices[0]))
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": 0.01, "momentum": 0.9})
        if mode == "seed_loop_hybrid":
            net.hybridize()
        if mode == "train_step":
            step = gluon.TrainStep(net, loss_fn, trainer, devices)

            def work():
                step(images, labels)
        else:
            def work():
                data_list = gluon.utils.split_and_load(images, devices)
                label_list = gluon.utils.split_and_load(labels, devices)
                with autograd.record():
                    losses = [loss_fn(net(x), y) for x, y in zip(data_list, label_list)]
                for l in losses:
                    l.backward()
                trainer.step(batch)
        if mode == "train_step":
            work()  # trace + compile
        report(mode, batch, median_time(work, 1, repeats))


if __name__ == "__main__":
    main()
