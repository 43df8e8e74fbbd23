"""ResNet-50 v1 in dlc (build/bin/dlc-bench-resnet50) and MXNet 1.9.1
(bench/peers/resnet50.py), alternating round by round, each benchmark in its own
process; prints medians over the rounds, dlc's ratio to MXNet, each framework's
hybridized/eager ratio, and how time grows with the batch.

    bench/.venv/bin/python bench/compare-resnet.py [--rounds 3] [--repeats 3]
        [--infer-batches 1 8 32] [--train-batches 8 32] [--peers mxnet]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCHES = ("resnet50_infer_eager", "resnet50_infer_hybrid",
           "resnet50_train_eager", "resnet50_train_hybrid")


def run(command):
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--infer-batches", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument("--train-batches", type=int, nargs="*", default=[8, 32])
    parser.add_argument("--peers", nargs="*", default=["mxnet"])
    parser.add_argument("--dlc", default=os.path.join(ROOT, "build", "bin", "dlc-bench-resnet50"))
    args = parser.parse_args()

    seconds = collections.defaultdict(list)
    for round_index in range(args.rounds):
        for bench in BENCHES:
            batches = args.train_batches if "train" in bench else args.infer_batches
            commands = [("dlc", [args.dlc, f"--only={bench}",
                                 "--batches=" + ",".join(map(str, batches)),
                                 f"--repeats={args.repeats}"])]
            if "mxnet" in args.peers:
                commands.append(("mxnet", [sys.executable, os.path.join(HERE, "peers", "resnet50.py"),
                                           "--only", bench, "--repeats", str(args.repeats),
                                           "--batches", *map(str, batches)]))
            for framework, command in commands:
                for row in run(command):
                    seconds[(framework, row["bench"], row["batch"])].append(row["seconds"])
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    frameworks = ["dlc", *args.peers]
    median = {key: statistics.median(values) for key, values in seconds.items()}
    print("| bench | batch | " + " | ".join(f"{f} ms" for f in frameworks) +
          " | " + " | ".join(f"dlc / {p} (speed)" for p in args.peers) + " |")
    print("|" + "---|" * (2 + len(frameworks) + len(args.peers)))
    for bench in BENCHES:
        for batch in sorted({b for f, n, b in median if n == bench}):
            cells = [f"{median[(f, bench, batch)] * 1e3:.1f}" if (f, bench, batch) in median
                     else "n/a" for f in frameworks]
            ratios = [f"{median[(p, bench, batch)] / median[('dlc', bench, batch)]:.2f}x"
                      if (p, bench, batch) in median and ("dlc", bench, batch) in median
                      else "n/a" for p in args.peers]
            print(f"| {bench} | {batch} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    print()
    print("| framework | mode | batch | hybridized speed / eager speed |")
    print("|---|---|---|---|")
    for f in frameworks:
        for mode in ("infer", "train"):
            for batch in sorted({b for g, n, b in median if g == f and mode in n}):
                eager = median.get((f, f"resnet50_{mode}_eager", batch))
                hybrid = median.get((f, f"resnet50_{mode}_hybrid", batch))
                if eager and hybrid:
                    print(f"| {f} | {mode} | {batch} | {eager / hybrid:.2f}x |")
    print()
    print("| framework | bench | time at batch 8 / time at batch 1 |")
    print("|---|---|---|")
    for f in frameworks:
        for bench in BENCHES:
            one, eight = median.get((f, bench, 1)), median.get((f, bench, 8))
            if one and eight:
                print(f"| {f} | {bench} | {eight / one:.2f}x |")


if __name__ == "__main__":
    main()
