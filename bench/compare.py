"""Runs dlc's LeafNetwork benchmark and its peers' in alternation, several rounds, and
prints a markdown table of median samples/s with dlc's ratio to each peer.

    bench/.venv/bin/python bench/compare.py [--rounds 3] [--threads N] [--peers torch mxnet]
        [--steps-only] [--no-compiled] [--interpreted] [--train-step] [--alone]

Rows: single layers (*_fwd_bwd), the whole network's eager step (leafnet_step; dlc's
Gluon version is leafnet_step_gluon) and its compiled step (leafnet_step_hybrid: dlc
hybridize, MXNet hybridize(static_alloc, static_shape), torch.compile).

dlc runs its benchmarks one after the other in one process, as a training job runs its
work; with --alone each dlc step benchmark also runs by itself in a fresh process
(framework dlc-alone), so that a slowdown one benchmark leaves to the next shows as the
difference of the two columns.

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
    parser.add_argument("--interpreted", action="store_true",
                        help="also dlc with DLC_GENERATED_KERNELS=0 (fused regions through "
                             "their interpreted kernels), as the framework dlc-interpreted")
    parser.add_argument("--train-step", action="store_true",
                        help="the whole training step instead (forward, loss, backward, SGD "
                             "with momentum) on one device: dlc-bench-trainstep's seed loops "
                             "and compiled step on cpu(0), the peers' --train-step")
    parser.add_argument("--alone", action="store_true",
                        help="also each dlc step benchmark alone in a fresh process, as the "
                             "framework dlc-alone")
    parser.add_argument("--dlc", default=os.path.join(ROOT, "build", "bin", "dlc-bench-leafnet"))
    parser.add_argument("--dlc-trainstep",
                        default=os.path.join(ROOT, "build", "bin", "dlc-bench-trainstep"))
    args = parser.parse_args()

    samples = collections.defaultdict(list)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    for round_index in range(args.rounds):
        dlc = [args.dlc, *(["--step-only"] if args.steps_only else []), *args.batches]
        runs = [(dlc, env, None)]
        if args.train_step:  # one process per batch, on one device like the peers
            one = dict(env, DLC_BENCH_DEVICES="cpu:1")
            runs = [([args.dlc_trainstep, batch, "10"], one, None) for batch in args.batches]
        if args.interpreted:
            runs += [(command, dict(command_env, DLC_GENERATED_KERNELS="0"), "dlc-interpreted")
                     for command, command_env, _ in list(runs)]
        if args.alone and not args.train_step:
            runs += [([args.dlc, f"--only={bench}", batch], env, "dlc-alone")
                     for bench in ("leafnet_step", "leafnet_step_gluon", "leafnet_step_hybrid")
                     for batch in args.batches]
        for peer in args.peers:
            flags = (["--steps-only"] if args.steps_only else []) + \
                    (["--no-compiled"] if args.no_compiled else []) + \
                    (["--train-step"] if args.train_step else [])
            runs.append(([sys.executable, os.path.join(HERE, "peers", "leafnet.py"),
                          "--threads", str(args.threads), *flags, peer, *args.batches], env, None))
        for command, command_env, label in runs:
            for row in run(command, command_env):
                framework = label or row["framework"]
                samples[(row["bench"], row["batch"], framework)].append(row["samples_per_s"])
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    variants = (["dlc-alone"] if args.alone and not args.train_step else []) + \
               (["dlc-interpreted"] if args.interpreted else [])
    frameworks = ["dlc", *variants, *args.peers]
    benches = sorted({(bench, batch) for bench, batch, _ in samples},
                     key=lambda key: (not key[0].startswith("leafnet_step"), key[0], key[1]))
    header = "| bench | batch | " + " | ".join(f"{f} samples/s" for f in frameworks)
    others = [*variants, *args.peers]
    header += " | " + " | ".join(f"dlc / {p}" for p in others) + " |"
    print(header)
    print("|" + "---|" * (2 + len(frameworks) + len(others)))
    for bench, batch in benches:
        medians = {f: statistics.median(samples[(bench, batch, f)]) for f in frameworks
                   if samples[(bench, batch, f)]}
        cells = [f"{medians.get(f, float('nan')):.1f}" for f in frameworks]
        ratios = [f"{medians['dlc'] / medians[p]:.2f}x" if p in medians and 'dlc' in medians
                  else "n/a" for p in others]
        print(f"| {bench} | {batch} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    # The compiled step against the same framework's eager one (dlc: its Gluon step).
    print()
    print("| framework | batch | compiled step / eager step |")
    print("|---|---|---|")
    for framework in frameworks:
        for batch in sorted({batch for _, batch, _ in samples}):
            def median(bench):
                values = samples[(bench, batch, framework)]
                return statistics.median(values) if values else None
            compiled = median("leafnet_step_hybrid")
            eager = median("leafnet_step_gluon") or median("leafnet_step")
            if compiled and eager:
                print(f"| {framework} | {batch} | {compiled / eager:.2f}x |")
    if COMMENTS:
        print()
        for line in dict.fromkeys(COMMENTS):
            print(line)


if __name__ == "__main__":
    main()
