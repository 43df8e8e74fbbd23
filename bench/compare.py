"""Runs dlc's LeafNetwork benchmark and its peers' in alternation, several rounds, and
prints a markdown table of median samples/s with dlc's ratio to each peer.

    bench/.venv/bin/python bench/compare.py [--rounds 3] [--threads N] [--peers torch mxnet]
        [--steps-only] [--no-compiled]

Rows: single layers (*_fwd_bwd), the whole network's eager step (leafnet_step; dlc's
Gluon version is leafnet_step_gluon) and its compiled step (leafnet_step_hybrid: dlc
hybridize, MXNet hybridize(static_alloc, static_shape), torch.compile).

Alternating the frameworks round by round spreads the machine's slow moments over all
of them; the medians are over rounds.
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


COMMENTS = []  # "# ..." lines the benchmarks print (compile times), last round's kept


def run(command, env=None):
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    COMMENTS.extend(line for line in output.splitlines() if line.startswith("# "))
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--peers", nargs="*", default=["torch", "mxnet"])
    parser.add_argument("--batches", nargs="*", default=["4", "32"])
    parser.add_argument("--steps-only", action="store_true", help="skip the single layers")
    parser.add_argument("--no-compiled", action="store_true",
                        help="skip the peers' compiled steps (torch.compile takes minutes)")
    parser.add_argument("--dlc", default=os.path.join(ROOT, "build", "bin", "dlc-bench-leafnet"))
    args = parser.parse_args()

    samples = collections.defaultdict(list)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    for round_index in range(args.rounds):
        runs = [[args.dlc, *(["--step-only"] if args.steps_only else []), *args.batches]]
        for peer in args.peers:
            flags = (["--steps-only"] if args.steps_only else []) + \
                    (["--no-compiled"] if args.no_compiled else [])
            runs.append([sys.executable, os.path.join(HERE, "peers", "leafnet.py"),
                         "--threads", str(args.threads), *flags, peer, *args.batches])
        for command in runs:
            for row in run(command, env):
                samples[(row["bench"], row["batch"], row["framework"])].append(row["samples_per_s"])
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    frameworks = ["dlc", *args.peers]
    benches = sorted({(bench, batch) for bench, batch, _ in samples},
                     key=lambda key: (not key[0].startswith("leafnet_step"), key[0], key[1]))
    header = "| bench | batch | " + " | ".join(f"{f} samples/s" for f in frameworks)
    header += " | " + " | ".join(f"dlc / {p}" for p in args.peers) + " |"
    print(header)
    print("|" + "---|" * (2 + len(frameworks) + len(args.peers)))
    for bench, batch in benches:
        medians = {f: statistics.median(samples[(bench, batch, f)]) for f in frameworks
                   if samples[(bench, batch, f)]}
        cells = [f"{medians.get(f, float('nan')):.1f}" for f in frameworks]
        ratios = [f"{medians['dlc'] / medians[p]:.2f}x" if p in medians else "n/a"
                  for p in args.peers]
        print(f"| {bench} | {batch} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    if COMMENTS:
        print()
        for line in dict.fromkeys(COMMENTS):
            print(line)


if __name__ == "__main__":
    main()
