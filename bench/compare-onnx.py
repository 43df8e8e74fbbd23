"""ONNX files exported by PyTorch, compiled by dlc and run by dlc-run, against ONNX Runtime
on the same files: outputs first (each model must match to 1e-4 of its outputs' scale),
then latency at batch 1 and 32, in alternating rounds, both on 2 threads.

    bench/.venv/bin/python bench/compare-onnx.py [--rounds 3] [--batches 1 32]
        [--models resnet50 mobilenet_v2 efficientnet_b0 densenet121 vit_b_16 bert]
        [--work /tmp/dlc-compare-onnx]

Models: torchvision's ResNet-50, MobileNetV2, EfficientNet-B0, DenseNet-121 and ViT-B/16
(random weights, seeded; 224x224 images), exported by torch.onnx's TorchScript exporter
at opset 17 with an open batch, and a `transformers` BERT-base (random weights,
sequence 128, the last 28 positions masked) exported per batch by the dynamo exporter
(the TorchScript one writes wrong BERT graphs with transformers 5). Exports are kept in
--work and reused. dlc compiles each file with `dlc-compile model.onnx --input-shape`;
`dlc-run --benchmark` reports its p50, ONNX Runtime is timed in this process (median of
as many runs). Prints a markdown table for bench/RESULTS.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

import numpy as np
import onnxruntime
import torch
from safetensors.numpy import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
from timing import median_seconds  # noqa: E402

VISION = ["resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "vit_b_16"]
THREADS = 2
SEQUENCE = 128


def export_vision(name, path):
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, name)(weights=None).eval()
    if name == "vit_b_16":  # torchvision starts its head at zero: every logit would be 0
        torch.nn.init.normal_(net.heads.head.weight, std=0.02)
    torch.onnx.export(net, (torch.randn(1, 3, 224, 224),), path, input_names=["input"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})


def export_bert(path, batch):
    import transformers
    torch.manual_seed(0)
    config = transformers.BertConfig()
    net = transformers.BertModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (batch, SEQUENCE))
    mask = torch.ones(batch, SEQUENCE, dtype=torch.int64)
    torch.onnx.export(net, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                      output_names=["sequence", "pooled"], opset_version=17, dynamo=True,
                      external_data=False)


def model_file(args, name, batch):
    """The ONNX file for `name` (exported once into --work) and its inputs at `batch`."""
    rng = np.random.default_rng(batch)
    if name == "bert":
        path = os.path.join(args.work, f"bert-b{batch}.onnx")
        if not os.path.exists(path):
            export_bert(path, batch)
        ids = rng.integers(0, 30522, (batch, SEQUENCE)).astype(np.int64)
        mask = np.ones((batch, SEQUENCE), np.int64)
        mask[:, 100:] = 0
        return path, {"input_ids": ids, "attention_mask": mask}, []
    path = os.path.join(args.work, name + ".onnx")
    if not os.path.exists(path):
        export_vision(name, path)
    images = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
    return path, {"input": images}, [f"input={batch}x3x224x224"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", nargs="*", type=int, default=[1, 32])
    parser.add_argument("--models", nargs="*", default=VISION + ["bert"])
    parser.add_argument("--work", default="/tmp/dlc-compare-onnx")
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="about how long each measurement runs")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))

    cases = []
    for name in args.models:
        for batch in args.batches:
            path, inputs, shapes = model_file(args, name, batch)
            prefix = os.path.join(args.work, f"{name}-b{batch}")
            compile_cmd = [os.path.join(args.build, "dlc-compile"), path, "-o", prefix + ".dlc"]
            for shape in shapes:
                compile_cmd += ["--input-shape", shape]
            subprocess.run(compile_cmd, check=True, capture_output=True, env=env)
            run_inputs = []
            for i, (key, value) in enumerate(inputs.items()):
                arg = "data" if len(inputs) == 1 else f"data{i}"
                save_file({arg: value}, f"{prefix}.{arg}.safetensors")
                run_inputs += ["--input", f"{arg}={prefix}.{arg}.safetensors"]
            subprocess.run([os.path.join(args.build, "dlc-run"), prefix + ".dlc", *run_inputs,
                            "--output", prefix + ".out.safetensors"], check=True,
                           capture_output=True, env=env)
            ours = load_file(prefix + ".out.safetensors")
            session = onnxruntime.InferenceSession(path, options,
                                                   providers=["CPUExecutionProvider"])
            theirs = session.run(None, inputs)
            for i, reference in enumerate(theirs):
                got = ours["output" if i == 0 else f"output{i}"]
                scale = max(float(np.abs(reference).max()), 1e-6)
                error = float(np.abs(got - reference).max()) / scale
                if error > 1e-4:
                    sys.exit(f"{name} batch {batch}: output {i} differs from ONNX Runtime's "
                             f"by {error:.2e} of its scale")
            # Runs per measurement: about --seconds of ONNX Runtime's time.
            once = median_seconds(lambda: session.run(None, inputs), 1, 2)
            runs = int(min(200, max(3, args.seconds / once)))
            cases.append((name, batch, prefix, run_inputs, session, inputs, runs))
            print(f"# {name} batch {batch}: outputs agree ({runs} runs per measurement)",
                  file=sys.stderr)

    latencies = {}
    for round_index in range(args.rounds):
        for name, batch, prefix, run_inputs, session, inputs, runs in cases:
            out = subprocess.run([os.path.join(args.build, "dlc-run"), prefix + ".dlc",
                                  *run_inputs, "--benchmark", str(runs)], check=True,
                                 capture_output=True, text=True, env=env).stdout
            p50 = float(re.search(r"latency p50 ([0-9.]+) ms", out).group(1))
            latencies.setdefault((name, batch, "dlc"), []).append(p50)
            latencies.setdefault((name, batch, "ort"), []).append(
                median_seconds(lambda: session.run(None, inputs), 2, runs) * 1000)
        print(f"# round {round_index + 1} of {args.rounds} done", file=sys.stderr)

    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, {THREADS} "
          f"threads each; median of {args.rounds} rounds of each one's median latency")
    print()
    print("| model | batch | dlc-run ms | ONNX Runtime ms | dlc / ONNX Runtime |")
    print("|---|---|---|---|---|")
    for name, batch, *_ in cases:
        dlc = statistics.median(latencies[(name, batch, "dlc")])
        ort = statistics.median(latencies[(name, batch, "ort")])
        print(f"| {name} | {batch} | {dlc:.2f} | {ort:.2f} | {dlc / ort:.2f} |")


if __name__ == "__main__":
    main()
