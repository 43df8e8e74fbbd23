"""bench/elementwise.cpp's activation chain in PyTorch, eager and torch.compile'd, timed
the same way (median of repeats after warm-up; "batch" is the element count).

    bench/.venv/bin/python bench/peers/elementwise.py [--threads N] [elements ...]
"""
import argparse
import json
import os
import torch

from timing import median_seconds


def chain(x):
    g = torch.nn.functional.gelu(x)
    t = torch.tanh(g * 0.75 + x)
    s = torch.sigmoid(t - g)
    return torch.exp(s * 0.5) * t + torch.log(s + 1.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", type=int, nargs="*", default=[65536, 1048576])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(3)
    compiled = torch.compile(chain)
    for n in args.sizes:
        x = torch.empty(n).uniform_(-3.0, 3.0)
        repeats = 20 if n >= 1000000 else 200
        for bench, work in (("activation_chain_eager", lambda: chain(x)),
                            ("activation_chain_hybrid", lambda: compiled(x))):
            with torch.no_grad():
                seconds = median_seconds(work, 3, repeats)
            print(json.dumps({"framework": "torch", "bench": bench, "batch": n,
                              "seconds": seconds, "samples_per_s": n / seconds}), flush=True)


if __name__ == "__main__":
    main()
