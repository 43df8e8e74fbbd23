"""Transformers in dlc and its peers, alternating round by round, each measurement in its
own process (its peak resident memory read when it exits). 2 threads each.

Attention alone (this part of the benchmark so far): causal, float32, batch 1, 12 heads of
64 features, at sequence lengths 512, 2048 and 8192, forward and forward + backward:
dlc's fused dlc.attention (npx.scaled_dot_product_attention) against PyTorch's
scaled_dot_product_attention. Reports median ms and the memory the attention held (peak
resident MiB less the peak once the inputs existed). An unfused attention would hold the
(L, L) weights of every head: 12 * L^2 * 4 bytes, 3 GiB at L = 8192.

    bench/.venv/bin/python bench/compare-transformers.py [--rounds 2] [--repeats 3]
        [--lengths 512 2048 8192]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(command, env):
    """The JSON the command prints and its peak resident memory (MiB)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = process.stdout.read()
        process.stdout.close()
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            sys.exit(f"{' '.join(command)} failed:\n{err.read()[-2000:]}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024


def measure(args, framework, length, backward):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    if framework == "dlc":
        python = "/usr/bin/python3"  # the interpreter dlc's module is built for
        env["PYTHONPATH"] = os.path.join(args.build, "python")
    else:
        python = sys.executable
    command = [python, os.path.join(HERE, "peers", "attention.py"), "--framework", framework,
               "--length", str(length), "--repeats", str(args.repeats),
               "--threads", str(args.threads)] + (["--backward"] if backward else [])
    result, peak = run(command, env)
    return result["ms"], peak - result["baseline_mib"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    times = collections.defaultdict(list)
    memory = collections.defaultdict(list)
    for round_ in range(args.rounds):
        for length in args.lengths:
            for backward in (False, True):
                for framework in ("dlc", "torch"):
                    key = (length, "fwd+bwd" if backward else "fwd", framework)
                    ms, held = measure(args, framework, length, backward)
                    times[key].append(ms)
                    memory[key].append(held)
                    print(f"round {round_ + 1}: L={length} {key[1]} {framework}: {ms:.1f} ms, "
                          f"{held:.0f} MiB held", flush=True)
    print(f"\n{args.rounds} rounds, {args.threads} threads, causal fp32 attention "
          f"(1, 12, L, 64); medians: ms (MiB held)")
    print(f"{'L':>6} {'pass':8} {'dlc':>18} {'PyTorch':>18} {'dlc/PyTorch time':>18}")
    for length in args.lengths:
        for kind in ("fwd", "fwd+bwd"):
            d = statistics.median(times[(length, kind, "dlc")])
            t = statistics.median(times[(length, kind, "torch")])
            dm = statistics.median(memory[(length, kind, "dlc")])
            tm = statistics.median(memory[(length, kind, "torch")])
            print(f"{length:>6} {kind:8} {d:>10.1f} ({dm:>5.0f}) {t:>10.1f} ({tm:>5.0f}) "
                  f"{d / t:>17.2f}x")


if __name__ == "__main__":
    main()
