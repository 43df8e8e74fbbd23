"""Four Conv2D(3x3, padding 1) + BatchNorm + ReLU blocks (64, 128, 256, 256 channels),
hybridized for prediction at batch 1 on 56x56 inputs: milliseconds per call. In
prediction dlc-fuse folds each batch norm into its convolution's weights, and
dlc-hoist-parameter-work makes that folding run once instead of on every call; run with
DLC_PROFILE=1 to count the folding's `dlc.mul` calls.

    PYTHONPATH=build/python bench/.venv/bin/python bench/prepared_weights.py [--calls 50]
"""
import argparse
import time

import dlc
from dlc.gluon import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    net = nn.HybridSequential()
    for channels in (64, 128, 256, 256):
        net.add(nn.Conv2D(channels, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"))
    net.initialize()
    x = dlc.np.random.uniform(size=(1, 3, 56, 56))
    net(x).wait_to_read()  # shapes: deferred initialization
    net.hybridize()
    net(x).wait_to_read()  # compiles
    start = time.perf_counter()
    for _ in range(args.calls):
        y = net(x)
    y.wait_to_read()
    print("hybridized, batch 1: %.2f ms per call" % ((time.perf_counter() - start) / args.calls * 1e3))


if __name__ == "__main__":
    main()
