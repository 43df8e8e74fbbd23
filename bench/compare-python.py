"""dlc from Python against dlc from C++, MXNet 1.9.1 and PyTorch from Python, in one run:

- small_op_x100: 100 dependent adds of 4-element arrays (the per-op cost of the framework
  and its binding), dlc (bench/peers/dlc_python.py) vs PyTorch and MXNet
  (bench/peers/small_ops.py), each in a process of its own;
- the same loop for dlc and PyTorch in one process, timed in alternating pairs
  (bench/peers/paired_small_ops.py): both sides of a pair meet the machine in the same
  state, which separate processes on this VM do not;
- the LeafNetwork training step at `--batch` on cpu(0)+cpu(1): dlc from Python
  (seed loop eager and hybridized, gluon.TrainStep) vs the same from C++
  (build/bin/dlc-bench-trainstep); the peers' one-device step (bench/peers/leafnet.py
  --train-step --no-compiled) for scale.

Rounds alternate the programs; the table shows each measurement's median over rounds.

    bench/.venv/bin/python bench/compare-python.py [--rounds 3] [--batch 32] [--ops-only]

(--ops-only: the per-op cost alone, which is quick enough for many rounds.)
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("DLC_BUILD_DIR", ROOT / "build"))
VENV_PYTHON = ROOT / "bench" / ".venv" / "bin" / "python"


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{result.stderr[-3000:]}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ops-only", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    results = {}
    paired = []

    def add(rows, prefix):
        for row in rows:
            results.setdefault((prefix, row["bench"]), []).append(row["seconds"])

    for round_ in range(args.rounds):
        print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr, flush=True)
        paired += run([VENV_PYTHON, ROOT / "bench/peers/paired_small_ops.py"], env)
        only = ["--ops-only"] if args.ops_only else []
        add(run(["/usr/bin/python3", ROOT / "bench/peers/dlc_python.py", str(args.batch),
                 str(args.repeats), *only], env), "dlc python")
        if not args.ops_only:
            add(run([BUILD / "bin/dlc-bench-trainstep", str(args.batch), str(args.repeats)]),
                "dlc c++")
        for peer in ["torch", "mxnet"]:
            add(run([VENV_PYTHON, ROOT / "bench/peers/small_ops.py", peer]), peer)
            if not args.ops_only:
                add(run([VENV_PYTHON, ROOT / "bench/peers/leafnet.py", "--train-step",
                         "--no-compiled", peer, str(args.batch)]), peer)

    median = {key: statistics.median(values) for key, values in results.items()}
    print("| measurement | seconds (median of %d rounds) |" % args.rounds)
    print("|---|---|")
    for key in sorted(median):
        print(f"| {key[0]} {key[1]} | {median[key]:.6f} |")
    ours = median[("dlc python", "small_op_x100")]
    print()
    print(f"per op from Python: dlc {ours * 1e4:.2f} us, PyTorch "
          f"{median[('torch', 'small_op_x100')] * 1e4:.2f} us, MXNet "
          f"{median[('mxnet', 'small_op_x100')] * 1e4:.2f} us (dlc / PyTorch "
          f"{ours / median[('torch', 'small_op_x100')]:.2f})")
    ratios = [d / t for d, t in zip(results[("dlc python", "small_op_x100")],
                                    results[("torch", "small_op_x100")])]
    print(f"dlc / PyTorch per round: {' '.join(f'{r:.2f}' for r in ratios)}")
    dlc_paired = statistics.median(p["dlc_seconds"] for p in paired) * 1e4
    torch_paired = statistics.median(p["torch_seconds"] for p in paired) * 1e4
    pair_ratios = [p["ratio_median"] for p in paired]
    print(f"paired in one process: dlc {dlc_paired:.2f} us, PyTorch {torch_paired:.2f} us per "
          f"op; dlc / PyTorch, median of the pairs, per round: "
          f"{' '.join(f'{r:.2f}' for r in pair_ratios)} (median "
          f"{statistics.median(pair_ratios):.2f})")
    if args.ops_only:
        return
    for mode in ["seed_loop_eager", "seed_loop_hybrid", "train_step"]:
        py, cc = median[("dlc python", mode)], median[("dlc c++", mode)]
        print(f"{mode}, batch {args.batch}: Python {args.batch / py:.1f} samples/s, C++ "
              f"{args.batch / cc:.1f} samples/s (Python / C++ time {py / cc:.3f})")
    for peer in ["torch", "mxnet"]:
        if (peer, "train_step") in median:
            print(f"{peer} train_step (one device), batch {args.batch}: "
                  f"{args.batch / median[(peer, 'train_step')]:.1f} samples/s")


if __name__ == "__main__":
    main()
