"""Model-zoo networks in dlc and its peers, alternating round by round, each measurement
in its own process (its peak resident memory read when it exits): inference at batch 1
and 32 (dlc eager, hybridized and dlc-run; PyTorch eager and torch.compile on
torchvision's architecture; MXNet 1.9.1 eager and hybridized; ONNX Runtime on
torchvision's model) and the training step at batch 32 (forward, softmax cross-entropy,
backward, SGD with momentum: dlc eager, hybridized and the compiled TrainStep; PyTorch
eager and torch.compile; MXNet hybridized). 2 threads each. Prints medians over the
rounds, ratios, and dlc's compiled step against the fp32 matmul rate oneDNN reaches
through dlc in the same run.

    bench/.venv/bin/python bench/compare-zoo.py [--rounds 2] [--repeats 3]
        [--networks resnet50_v1 mobilenetv2_1.0] [--infer-batches 1 32] [--train-batch 32]
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
INFER = [("dlc", "infer_eager"), ("dlc", "infer_hybrid"), ("dlc-run", "infer"),
         ("torch", "infer_eager"), ("torch_compile", "infer_eager"), ("mxnet", "infer_eager"),
         ("mxnet", "infer_hybrid"), ("onnxruntime", "infer_eager")]
TRAIN = [("dlc", "train_eager"), ("dlc", "train_hybrid"), ("dlc", "train_step"),
         ("torch", "train_eager"), ("torch_compile", "train_eager"), ("mxnet", "train_hybrid")]


def run(command, env=None):
    """stdout and the peak resident memory (MiB) of `command`, run to its end."""
    with tempfile.TemporaryFile(mode="w+") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = process.stdout.read()
        process.stdout.close()
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            err.seek(0)
            sys.exit(f"{' '.join(command)} failed:\n{err.read()[-2000:]}")
    return out, usage.ru_maxrss / 1024


def measure(args, framework, network, bench, batch, models):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    # A batch-1 prediction takes milliseconds: more repeats for a steady median.
    repeats = args.repeats * (10 if batch == 1 and bench.startswith("infer") else 1)
    if framework == "dlc":
        command = [os.path.join(args.build, "dlc-bench-zoo"), f"--network={network}",
                   f"--only={bench}", f"--batch={batch}", f"--repeats={repeats}"]
    elif framework == "dlc-run":
        command = [os.path.join(args.build, "dlc-run"), models[(network, batch)],
                   "--benchmark", str(args.runs)]
    else:
        command = [sys.executable, os.path.join(HERE, "peers", "zoo.py"), "--framework", framework,
                   "--network", network, "--only", bench, "--batch", str(batch),
                   "--repeats", str(repeats), "--threads", str(args.threads)]
    out, peak = run(command, env)
    if framework == "dlc-run":
        return float(re.search(r"latency p50 ([0-9.]+) ms", out).group(1)) / 1e3, peak
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows[-1]["seconds"], peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30, help="dlc-run's calls per round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--networks", nargs="*", default=["resnet50_v1", "mobilenetv2_1.0"])
    parser.add_argument("--infer-batches", type=int, nargs="*", default=[1, 32])
    parser.add_argument("--train-batch", type=int, default=32)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="dlc-zoo-")
    models, macs = {}, {}
    for network in args.networks:
        out, _ = run([os.path.join(args.build, "dlc-bench-zoo"), f"--network={network}", "--only=macs"])
        macs[network] = json.loads(out.splitlines()[-1])["forward_macs_per_image"]
        for batch in args.infer_batches:
            models[(network, batch)] = os.path.join(work, f"{network}-b{batch}.dlc")
            run([os.path.join(args.build, "dlc-bench-zoo"), f"--network={network}",
                 f"--save-model={models[(network, batch)]}", f"--batch={batch}"])

    seconds, peaks, matmul = collections.defaultdict(list), collections.defaultdict(list), []
    for round_index in range(args.rounds):
        out, _ = run([os.path.join(args.build, "dlc-bench-zoo"), "--only=matmul"])
        matmul.append(json.loads(out.splitlines()[-1])["gflops"])
        for network in args.networks:
            cases = [(f, b, batch) for batch in args.infer_batches for f, b in INFER]
            cases += [(f, b, args.train_batch) for f, b in TRAIN]
            for framework, bench, batch in cases:
                s, peak = measure(args, framework, network, bench, batch, models)
                key = (network, framework, bench, batch)
                seconds[key].append(s)
                peaks[key].append(peak)
                print(f"# round {round_index + 1}: {network} {framework} {bench} batch {batch}: "
                      f"{s * 1e3:.1f} ms, peak {peak:.0f} MiB", file=sys.stderr, flush=True)

    med = {k: statistics.median(v) for k, v in seconds.items()}
    peak = {k: max(v) for k, v in peaks.items()}
    rate = statistics.median(matmul)
    print(f"\n{args.rounds} rounds, {args.threads} threads; medians in ms (peak resident MiB); "
          f"dlc's fp32 matmul (oneDNN, 2048^3): {rate:.0f} GFLOP/s\n")
    for network in args.networks:
        print(f"### {network} ({macs[network] / 1e9:.2f} GMAC per image forward)\n")
        print("| what | batch | framework | ms | peak MiB |")
        print("|---|---|---|---|---|")
        for (n, framework, bench, batch), value in sorted(med.items(), key=lambda kv: (kv[0][2][:5], kv[0][3])):
            if n == network:
                print(f"| {bench} | {batch} | {framework} | {value * 1e3:.1f} | "
                      f"{peak[(n, framework, bench, batch)]:.0f} |")
        b = args.train_batch
        step = med[(network, "dlc", "train_step", b)]
        flops = 3 * 2 * macs[network] * b  # forward and two gradients
        print(f"\ndlc's compiled step, batch {b}: {flops / step / 1e9:.0f} GFLOP/s "
              f"({flops / step / 1e9 / rate * 100:.0f} % of the matmul rate); speed against "
              + ", ".join(f"{name} {med[(network, f, bn, b)] / step:.2f}x"
                          for name, f, bn in (("PyTorch eager", "torch", "train_eager"),
                                              ("torch.compile", "torch_compile", "train_eager"),
                                              ("MXNet hybridized", "mxnet", "train_hybrid"),
                                              ("dlc eager", "dlc", "train_eager"))))
        for batch in args.infer_batches:
            ours = med[(network, "dlc-run", "infer", batch)]
            print(f"batch {batch} inference: dlc-run / ONNX Runtime latency "
                  f"{ours / med[(network, 'onnxruntime', 'infer_eager', batch)]:.2f}, dlc hybridized / "
                  f"eager speed {med[(network, 'dlc', 'infer_eager', batch)] / med[(network, 'dlc', 'infer_hybrid', batch)]:.2f}x")
        print()


if __name__ == "__main__":
    main()
