"""The per-op cost of a peer from Python: 100 dependent adds of 4-element arrays, the
loop bench/peers/leafnet.py times as small_op_x100, alone (no network).

    bench/.venv/bin/python bench/peers/small_ops.py torch|mxnet
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from leafnet import median_time, report  # noqa: E402


def main():
    framework = sys.argv[1]
    if framework == "torch":
        import torch
        small, increment = torch.rand(4) * 2 - 1, torch.ones(4)
        sync = lambda: None  # noqa: E731  (eager CPU PyTorch is synchronous)
    else:
        import mxnet as mx
        from mxnet import np, npx
        npx.set_np()
        small, increment = np.random.uniform(-1, 1, size=(4,)), np.ones((4,))
        sync = mx.nd.waitall

    def small_ops():
        acc = small
        for _ in range(100):
            acc = acc + increment
    report(framework, "small_op_x100", 1, median_time(small_ops, sync, 10, 50))


if __name__ == "__main__":
    main()
