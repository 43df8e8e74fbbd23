"""Times compiled-model inference: dlc-run --benchmark against PyTorch eager and ONNX
Runtime on the same weights, at batch 1 and 32, and checks that all three compute the
same outputs. Prints a markdown table of median latencies and dlc's ratios.

    bench/.venv/bin/python bench/compare-inference.py [--rounds 3] [--runs 200]
        [--networks fashion leaf] [--batches 1 32]

Networks: `fashion`, the one dlc-train trains (28x28 Fashion-MNIST images), `leaf`,
the seed's LeafNetwork (3x128x128), and `resnet50` (ResNet-50 v1 as
dlc-bench-resnet50 builds it, 3x224x224; ONNX Runtime only, and dlc's outputs are
checked against its). dlc-bench-inference-models writes each network's
parameters (safetensors) and one .dlc file per batch; the peers build the same network
from those parameters: PyTorch as torch.nn modules (eval mode, inference_mode), ONNX
Runtime from a graph written with the onnx package. Every framework uses the machine's
cores (OMP_NUM_THREADS and the peers' thread settings left at their defaults). Rounds
alternate the frameworks so that a slow moment of the machine is spread over all; within
a round ONNX Runtime runs right after dlc-run, and the last column is the median of the
rounds' dlc / ONNX Runtime ratios, each pair measured moments apart.
"""
import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
from timing import median_seconds  # noqa: E402


def read_safetensors(path):
    """{name: float32 array} from a safetensors file (the format is simple enough that
    the standard library reads it; the safetensors package is not needed)."""
    with open(path, "rb") as f:
        data = f.read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", (name, entry["dtype"])
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[8 + size + begin:8 + size + end],
                                      dtype=np.float32).reshape(entry["shape"])
    return tensors


def layers(network):
    """The network as a list of layers naming their parameters' prefixes (as dlc's
    collect_params names them)."""
    spec = []
    if network == "fashion":
        for i in range(3):
            spec += [("conv", f"{i}.0", 1), ("relu",), ("pool", 2, 2), ("bn", f"{i}.2")]
        spec += [("flatten",), ("dense", "4"), ("relu",), ("dense", "6"), ("relu",),
                 ("dense", "8")]
    else:
        for block in ("conv1", "conv2", "conv3"):
            spec += [("conv", f"{block}.0", 0), ("relu",), ("pool", 4, 2), ("bn", f"{block}.2")]
        spec += [("flatten",), ("dense", "dense1.0"), ("relu",), ("dense", "dense2.0"),
                 ("relu",), ("dense", "dense3")]
    return spec


def torch_model(network, w):
    modules = []
    t = lambda name: torch.from_numpy(w[name].copy())
    for layer in layers(network):
        kind = layer[0]
        if kind == "conv":
            weight = t(layer[1] + ".weight")
            conv = torch.nn.Conv2d(weight.shape[1], weight.shape[0], weight.shape[2],
                                   padding=layer[2])
            conv.weight.data, conv.bias.data = weight, t(layer[1] + ".bias")
            modules.append(conv)
        elif kind == "relu":
            modules.append(torch.nn.ReLU())
        elif kind == "pool":
            modules.append(torch.nn.MaxPool2d(layer[1], layer[2]))
        elif kind == "bn":
            gamma = t(layer[1] + ".gamma")
            bn = torch.nn.BatchNorm2d(gamma.shape[0], eps=1e-5)
            bn.weight.data, bn.bias.data = gamma, t(layer[1] + ".beta")
            bn.running_mean.data = t(layer[1] + ".running_mean")
            bn.running_var.data = t(layer[1] + ".running_var")
            modules.append(bn)
        elif kind == "flatten":
            modules.append(torch.nn.Flatten())
        elif kind == "dense":
            weight = t(layer[1] + ".weight")
            dense = torch.nn.Linear(weight.shape[1], weight.shape[0])
            dense.weight.data, dense.bias.data = weight, t(layer[1] + ".bias")
            modules.append(dense)
    return torch.nn.Sequential(*modules).eval()


def onnx_model(network, w, input_shape):
    nodes, initializers = [], []
    value = "data"

    def constant(name):
        initializers.append(numpy_helper.from_array(w[name], name))
        return name

    for k, layer in enumerate(layers(network)):
        kind, out = layer[0], f"v{k}"
        if kind == "conv":
            pad = layer[2]
            nodes.append(helper.make_node(
                "Conv", [value, constant(layer[1] + ".weight"), constant(layer[1] + ".bias")],
                [out], pads=[pad] * 4))
        elif kind == "relu":
            nodes.append(helper.make_node("Relu", [value], [out]))
        elif kind == "pool":
            nodes.append(helper.make_node("MaxPool", [value], [out],
                                          kernel_shape=[layer[1]] * 2, strides=[layer[2]] * 2))
        elif kind == "bn":
            p = layer[1]
            nodes.append(helper.make_node(
                "BatchNormalization",
                [value, constant(p + ".gamma"), constant(p + ".beta"),
                 constant(p + ".running_mean"), constant(p + ".running_var")],
                [out], epsilon=1e-5))
        elif kind == "flatten":
            nodes.append(helper.make_node("Flatten", [value], [out], axis=1))
        elif kind == "dense":
            nodes.append(helper.make_node(
                "Gemm", [value, constant(layer[1] + ".weight"), constant(layer[1] + ".bias")],
                [out], transB=1))
        value = out
    classes = w[layers(network)[-1][1] + ".weight"].shape[0]
    graph = helper.make_graph(
        nodes, network, [helper.make_tensor_value_info("data", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info(value, TensorProto.FLOAT, [input_shape[0], classes])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def resnet50_onnx(w, input_shape):
    """ResNet-50 v1 as dlc-bench-resnet50 builds it (MXNet's resnet50_v1: bottlenecks
    with the stride on their first 1x1 convolution), from its parameters' names."""
    nodes, initializers = [], []
    count = [0]

    def constant(name):
        initializers.append(numpy_helper.from_array(w[name], name))
        return name

    def node(op, inputs, **attributes):
        count[0] += 1
        out = f"v{count[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attributes))
        return out

    def conv_bn(value, conv, bn, stride, relu):
        kernel = w[conv + ".weight"].shape[2]
        value = node("Conv", [value, constant(conv + ".weight")], strides=[stride] * 2,
                     pads=[kernel // 2] * 4)
        value = node("BatchNormalization",
                     [value, constant(bn + ".gamma"), constant(bn + ".beta"),
                      constant(bn + ".running_mean"), constant(bn + ".running_var")],
                     epsilon=1e-5)
        return node("Relu", [value]) if relu else value

    value = conv_bn("data", "0", "1", 2, True)
    value = node("MaxPool", [value], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    index = 4
    for stage, blocks in enumerate((3, 4, 6, 3)):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            body = f"{index}.body"
            out = conv_bn(value, body + ".0", body + ".1", stride, True)
            out = conv_bn(out, body + ".3", body + ".4", 1, True)
            out = conv_bn(out, body + ".6", body + ".7", 1, False)
            shortcut = value
            if b == 0:
                shortcut = conv_bn(value, f"{index}.downsample.0", f"{index}.downsample.1",
                                   stride, False)
            value = node("Relu", [node("Add", [out, shortcut])])
            index += 1
    value = node("AveragePool", [value], kernel_shape=[7, 7], strides=[7, 7])
    value = node("Flatten", [value], axis=1)
    dense = f"{index + 2}"
    value = node("Gemm", [value, constant(dense + ".weight"), constant(dense + ".bias")], transB=1)
    graph = helper.make_graph(
        nodes, "resnet50", [helper.make_tensor_value_info("data", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info(value, TensorProto.FLOAT, [input_shape[0], 1000])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


WARMUP = 20


def time_calls(call, runs, warmup=WARMUP):
    """Median milliseconds of `runs` calls after `warmup` (bench/peers/timing.py)."""
    return median_seconds(call, warmup, runs) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--networks", nargs="*", default=["fashion", "leaf"])
    parser.add_argument("--batches", nargs="*", type=int, default=[1, 32])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="dlc-inference-")
    subprocess.run([os.path.join(args.build, "dlc-bench-inference-models"), work,
                    *map(str, args.batches)], check=True, capture_output=True)
    if "resnet50" in args.networks:
        subprocess.run([os.path.join(args.build, "dlc-bench-resnet50"), f"--save-models={work}",
                        "--batches=" + ",".join(map(str, args.batches))], check=True,
                       capture_output=True)
    dlc_run = os.path.join(args.build, "dlc-run")
    torch.set_grad_enabled(False)
    cases = []
    for network in args.networks:
        w = read_safetensors(os.path.join(work, network + ".safetensors"))
        # ResNet-50 has no torch twin here: dlc is checked against ONNX Runtime.
        net = torch_model(network, w) if network != "resnet50" else None
        for batch in args.batches:
            prefix = os.path.join(work, f"{network}-b{batch}")
            x = read_safetensors(prefix + ".input.safetensors")["data"]
            # The same outputs from all three before any timing.
            subprocess.run([dlc_run, prefix + ".dlc", "--input", f"data={prefix}.input.safetensors",
                            "--output", prefix + ".output.safetensors"], check=True,
                           capture_output=True)
            ours = read_safetensors(prefix + ".output.safetensors")["output"]
            graph = (resnet50_onnx(w, list(x.shape)) if network == "resnet50"
                     else onnx_model(network, w, list(x.shape)))
            session = onnxruntime.InferenceSession(graph.SerializeToString(),
                                                   providers=["CPUExecutionProvider"])
            ort_out = session.run(None, {"data": x})[0]
            if net is not None:
                with torch.inference_mode():
                    theirs = net(torch.from_numpy(x.copy())).numpy()
                checked = (("dlc", ours), ("onnxruntime", ort_out))
            else:
                theirs, checked = ort_out, (("dlc", ours),)
            scale = max(1.0, float(np.abs(theirs).max()))
            for name, other in checked:
                error = float(np.abs(other - theirs).max()) / scale
                if error > 1e-4:
                    sys.exit(f"{network} batch {batch}: {name} differs from "
                             f"{'torch' if net is not None else 'onnxruntime'} by {error:.2e}")
            cases.append((network, batch, prefix, x, net, session))
            print(f"# {network} batch {batch}: outputs agree", file=sys.stderr)

    latencies = {}
    for round_index in range(args.rounds):
        for network, batch, prefix, x, net, session in cases:
            # As many warm-up runs as the peers get (time_calls).
            out = subprocess.run([dlc_run, prefix + ".dlc", "--benchmark", str(args.runs),
                                  "--warmup", str(WARMUP)],
                                 check=True, capture_output=True, text=True).stdout
            p50 = float(re.search(r"latency p50 ([0-9.]+) ms", out).group(1))
            latencies.setdefault((network, batch, "dlc"), []).append(p50)
            # ONNX Runtime right after dlc-run, so that each round's pair meets the
            # machine in the same state (this VM's speed moves by a third within
            # seconds); PyTorch after both.
            latencies.setdefault((network, batch, "onnxruntime"), []).append(
                time_calls(lambda: session.run(None, {"data": x}), args.runs))
            if net is not None:
                tx = torch.from_numpy(x.copy())
                with torch.inference_mode():
                    latencies.setdefault((network, batch, "torch"), []).append(
                        time_calls(lambda: net(tx), args.runs))
        print(f"# round {round_index + 1} of {args.rounds} done", file=sys.stderr)

    print(f"torch {torch.__version__} (threads {torch.get_num_threads()}), onnxruntime "
          f"{onnxruntime.__version__}, {os.cpu_count()} cores; median of {args.rounds} rounds "
          f"of the p50 of {args.runs} runs")
    print()
    print("| network | batch | dlc-run ms | torch eager ms | onnxruntime ms | dlc / torch | "
          "dlc / onnxruntime | dlc / onnxruntime, median of the rounds' pairs |")
    print("|---|---|---|---|---|---|---|---|")
    for network, batch, *_ in cases:
        m = {f: statistics.median(latencies[(network, batch, f)])
             for f in ("dlc", "torch", "onnxruntime") if (network, batch, f) in latencies}
        torch_ms = f"{m['torch']:.3f}" if "torch" in m else "-"
        torch_ratio = f"{m['dlc'] / m['torch']:.2f}" if "torch" in m else "-"
        paired = statistics.median(
            d / o for d, o in zip(latencies[(network, batch, "dlc")],
                                  latencies[(network, batch, "onnxruntime")]))
        print(f"| {network} | {batch} | {m['dlc']:.3f} | {torch_ms} | "
              f"{m['onnxruntime']:.3f} | {torch_ratio} | "
              f"{m['dlc'] / m['onnxruntime']:.2f} | {paired:.2f} |")


if __name__ == "__main__":
    main()
