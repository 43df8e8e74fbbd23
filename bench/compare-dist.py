"""dlc-train as a job of 2 processes (mpirun) against dlc-train as 1 process with 2
devices and against PyTorch DistributedDataParallel (gloo, 2 processes), in one run, on
the same network (examples/LeafNetwork.h fashion_network; bench/peers/torch_ddp_fashion.py
for PyTorch), data (Fashion-MNIST), global batch and optimizer (Adam):

- dlc 1 process: `dlc-train --devices cpu:0,cpu:1` (the compiled data-parallel step);
- dlc 2 processes: `mpirun -np 2 dlc-train --devices cpu:0,cpu:1`, one device each;
- PyTorch DDP: 2 processes, gloo, each with its share of the cores.

Each measures the last of `--epochs` epochs (the first compiles or warms up); rounds
alternate the three, and the table shows the median over rounds. `--profile` adds one
run of each dlc job with DLC_PROFILE=1 (where the time goes: kernels, and the sum over
processes as "all_reduce over processes").

    bench/.venv/bin/python bench/compare-dist.py [--rounds 3] [--epochs 2] [--limit 6400] [--profile]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("DLC_BUILD_DIR", ROOT / "build"))
VENV_PYTHON = ROOT / "bench" / ".venv" / "bin" / "python"
MPIRUN = [shutil.which("mpirun") or "mpirun", "--allow-run-as-root", "--oversubscribe",
          "--bind-to", "none", "--mca", "btl_vader_single_copy_mechanism", "none"]


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{result.stdout[-2000:]}"
                 f"{result.stderr[-2000:]}")
    return result.stdout + result.stderr


def dlc_train(args, processes, out, env=None):
    command = [str(BUILD / "bin" / "dlc-train"), "--epochs", str(args.epochs), "--limit",
               str(args.limit), "--batch-size", str(args.batch_size), "--devices",
               "cpu:0,cpu:1", "--out", str(out)]
    if processes > 1:
        command = MPIRUN + ["-np", str(processes)] + (
            ["-x", "DLC_PROFILE"] if env and "DLC_PROFILE" in env else []) + command
    output = run(command, env)
    rates = re.findall(r"\[Epoch \d+\] time cost: [0-9.]+ s \(([0-9.]+) samples/s", output)
    if not rates:
        sys.exit(f"no epoch time in dlc-train's output:\n{output[-2000:]}")
    return float(rates[-1]), output


def torch_ddp(args):
    output = run([str(VENV_PYTHON), str(ROOT / "bench" / "peers" / "torch_ddp_fashion.py"),
                  "--processes", "2", "--epochs", str(args.epochs), "--limit", str(args.limit),
                  "--batch-size", str(args.batch_size)])
    line = [l for l in output.splitlines() if l.startswith("{")][-1]
    return json.loads(line)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=6400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    samples = {"dlc 1 process, cpu(0)+cpu(1)": [], "dlc 2 processes, 1 device each": [],
               "PyTorch DDP gloo, 2 processes": []}
    torch_parts = []
    with tempfile.TemporaryDirectory() as scratch:
        out = pathlib.Path(scratch)
        for index in range(args.rounds):
            print(f"round {index + 1}/{args.rounds}", file=sys.stderr, flush=True)
            samples["dlc 1 process, cpu(0)+cpu(1)"].append(dlc_train(args, 1, out / "one")[0])
            samples["dlc 2 processes, 1 device each"].append(dlc_train(args, 2, out / "two")[0])
            peer = torch_ddp(args)
            samples["PyTorch DDP gloo, 2 processes"].append(peer["samples_per_s"])
            torch_parts.append(peer)
        profiles = {}
        if args.profile:
            env = dict(os.environ, DLC_PROFILE="1")
            profiles["1 process"] = dlc_train(args, 1, out / "p1", env)[1]
            profiles["2 processes"] = dlc_train(args, 2, out / "p2", env)[1]

    print(f"dlc-train epochs of {args.limit} Fashion-MNIST images, global batch "
          f"{args.batch_size}, Adam; the last of {args.epochs} epochs, median of "
          f"{args.rounds} rounds\n")
    print("| job | samples/s | vs dlc 1 process | vs PyTorch DDP |\n|---|---|---|---|")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    base, peer = medians["dlc 1 process, cpu(0)+cpu(1)"], medians["PyTorch DDP gloo, 2 processes"]
    for name, value in medians.items():
        print(f"| {name} | {value:.0f} | {value / base:.2f} | {value / peer:.2f} |")
    print("\nper round (samples/s):")
    for name, values in samples.items():
        print(f"  {name}: " + " ".join(f"{v:.0f}" for v in values))
    last = torch_parts[-1]
    print(f"\nPyTorch {last.get('torch')}: {last.get('threads_per_process')} threads per process; "
          f"last round's rank 0 seconds: forward {last.get('forward_s')}, backward with "
          f"DDP's all-reduce {last.get('backward_s')}, optimizer {last.get('step_s')}")
    for name, output in profiles.items():
        print(f"\nDLC_PROFILE=1, dlc {name} (rank 0):")
        lines = output.splitlines()
        start = next((i for i, l in enumerate(lines) if "profile" in l.lower()), None)
        for line in lines[start:start + 25] if start is not None else lines[-25:]:
            print("  " + line)


if __name__ == "__main__":
    main()
