"""The per-op cost of dlc and PyTorch from Python, measured in one process, in pairs: each
pair times dlc's small_op_x100 (100 dependent adds of 4-element arrays, then a wait) and
PyTorch's, back to back, in alternating order. Whatever state the machine is in (this
VM moves whole processes between fast and slow states for seconds at a time), both
sides of a pair meet it, so the pairs' ratios are steadier than ratios of separate
runs. Prints one JSON line: both medians and the median and quartiles of the ratios.

    PYTHONPATH=build/python bench/.venv/bin/python bench/peers/paired_small_ops.py [pairs]

PyTorch is imported first: its NCCL is newer than the one dlc links, and the process
can hold one.
"""
import json
import statistics
import sys
import time

import torch  # noqa: I001  (before dlc, see above)
from dlc import np, npx


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    torch.set_num_threads(1)
    ours = (np.random.uniform(-1, 1, size=(4,)), np.ones((4,)))
    theirs = (torch.rand(4) * 2 - 1, torch.ones(4))

    def dlc_ops():
        acc, inc = ours
        for _ in range(100):
            acc = acc + inc
        npx.waitall()

    def torch_ops():
        acc, inc = theirs
        for _ in range(100):
            acc = acc + inc

    def timed(work):
        start = time.perf_counter()
        work()
        return time.perf_counter() - start

    for _ in range(50):  # warm-up
        dlc_ops()
        torch_ops()
    d, t = [], []
    for k in range(pairs):
        first, second = (dlc_ops, torch_ops) if k % 2 == 0 else (torch_ops, dlc_ops)
        a, b = timed(first), timed(second)
        d.append(a if first is dlc_ops else b)
        t.append(b if first is dlc_ops else a)
    ratios = sorted(x / y for x, y in zip(d, t))
    quartiles = statistics.quantiles(ratios, n=4)
    print(json.dumps({"bench": "paired_small_op_x100", "pairs": pairs,
                      "dlc_seconds": statistics.median(d), "torch_seconds": statistics.median(t),
                      "ratio_median": statistics.median(ratios),
                      "ratio_q1": quartiles[0], "ratio_q3": quartiles[2]}))


if __name__ == "__main__":
    main()
