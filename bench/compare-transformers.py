"""Transformers in dlc and its peers, alternating round by round, each measurement in its
own process (its peak resident memory read when it exits). 2 threads each.

--parts picks what runs (all three by default):

attention: causal float32 attention alone, batch 1, 12 heads of 64 features, at
sequence lengths 512, 2048 and 8192, forward and forward + backward: dlc's fused
dlc.attention (npx.scaled_dot_product_attention) against PyTorch's
scaled_dot_product_attention. Median ms and the memory the attention held (peak
resident MiB less the peak once the inputs existed). An unfused attention would hold the
(L, L) weights of every head: 12 * L^2 * 4 bytes, 3 GiB at L = 8192.

Peak memory is each measuring process's own high-water mark (VmHWM; GNU time's for
dlc-run), not ru_maxrss, which Linux carries from a forking parent across exec.

bert: BERT-base inference at sequence 128, batch 1 and 8, on random weights that
`transformers` writes (a Hugging Face folder every framework loads): dlc's text-zoo
BertModel hybridized (Python), the same network as a model file under `dlc-run
--benchmark`, PyTorch eager and torch.compile, and ONNX Runtime on the model
torch.onnx exports. The outputs agree (1e-4 of their scale) before any timing.

vit: ViT-B/16 inference on 224x224 images, batch 1 and 8, as bert (its random
checkpoint a ViTForImageClassification of 1000 classes; the logits agree).

gpt2: a GPT-2 124M training step (language-model loss, backward, Adam) at batch 4,
sequence 128 and 512: dlc eager, hybridized (the seed's loop) and the compiled step,
PyTorch eager and torch.compile. Tokens/s and peak resident memory.

    bench/.venv/bin/python bench/compare-transformers.py [--parts bert gpt2 vit] [--rounds 2]
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


def peer_env(args, framework):
    """The interpreter and environment of a measurement: dlc's module is built for the
    system Python, the peers live in this virtual environment."""
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    if framework.startswith("dlc"):
        env["PYTHONPATH"] = os.path.join(args.build, "python")
        return "/usr/bin/python3", env
    return sys.executable, env


def measure_attention(args, framework, length, backward):
    python, env = peer_env(args, framework)
    command = [python, os.path.join(HERE, "peers", "attention.py"), "--framework", framework,
               "--length", str(length), "--repeats", str(args.repeats),
               "--threads", str(args.threads)] + (["--backward"] if backward else [])
    result, peak = run(command, env)
    return result["ms"], peak - result["baseline_mib"]


def attention_part(args):
    times = collections.defaultdict(list)
    memory = collections.defaultdict(list)
    for round_ in range(args.rounds):
        for length in args.lengths:
            for backward in (False, True):
                for framework in ("dlc", "torch"):
                    key = (length, "fwd+bwd" if backward else "fwd", framework)
                    ms, held = measure_attention(args, framework, length, backward)
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


def random_checkpoint(folder, family):
    """A Hugging Face folder of `family` (BERT-base, GPT-2 124M or ViT-B/16 with 1000
    classes) with random weights."""
    import torch
    import transformers
    if os.path.exists(os.path.join(folder, "model.safetensors")):
        return
    torch.manual_seed(0)
    if family == "bert":
        model = transformers.BertModel(transformers.BertConfig())
    elif family == "vit":
        model = transformers.ViTForImageClassification(transformers.ViTConfig(num_labels=1000))
    else:
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    model.save_pretrained(folder, safe_serialization=True)


def export_onnx(model_name, folder, inputs, path):
    """The peer model as ONNX (torch.onnx's dynamo exporter), its first output only."""
    import torch
    import transformers
    if model_name == "bert":
        model = transformers.BertModel.from_pretrained(folder).eval()
        names = ["input_ids", "token_type_ids", "attention_mask"]
        keys = ("ids", "token_types", "mask")
    else:
        model = transformers.ViTForImageClassification.from_pretrained(folder).eval()
        names, keys = ["pixel_values"], ("images",)

    class FirstOutput(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *x):
            out = self.inner(**dict(zip(names, x)))
            return out.last_hidden_state if model_name == "bert" else out.logits
    x = tuple(torch.from_numpy(inputs[k]) for k in keys)
    torch.onnx.export(FirstOutput(model).eval(), x, path, dynamo=True, input_names=names,
                      output_names=["output"])


def bert_inputs(rng, batch):
    return {"ids": rng.randint(1, 30522, (batch, 128)).astype("int64"),
            "token_types": rng.randint(0, 1, (batch, 128)).astype("int64"),
            "mask": rng.randint(1, 2, (batch, 128)).astype("int64")}


def vit_inputs(rng, batch):
    return {"images": rng.standard_normal((batch, 3, 224, 224)).astype("float32")}


# What the inference part measures of each model: its random checkpoint's folder, its
# inputs for a batch, and the table's title.
INFERENCE = {
    "bert": {"folder": "bert-base", "inputs": bert_inputs,
             "title": "BERT-base inference, sequence 128"},
    "vit": {"folder": "vit-base", "inputs": vit_inputs,
            "title": "ViT-B/16 inference, 224x224 images"},
}


def inference_part(args, work, model):
    """BERT or ViT inference: dlc hybridized, dlc-run, PyTorch eager and torch.compile,
    ONNX Runtime; the outputs agree before any timing."""
    import numpy as onp
    from safetensors.numpy import save_file
    spec = INFERENCE[model]
    folder = os.path.join(work, spec["folder"])
    random_checkpoint(folder, model)
    dlc_run = os.path.join(args.build, "bin", "dlc-run")
    if not os.path.exists("/usr/bin/time"):
        sys.exit(f"{model}: dlc-run's peak memory is read with GNU time: apt-get install time")
    peer = os.path.join(HERE, "peers", "transformer_inference.py")
    cases = {}
    for batch in args.batches:
        inputs = spec["inputs"](onp.random.RandomState(batch), batch)
        prefix = os.path.join(work, f"{model}-b{batch}")
        onp.savez(prefix + ".npz", **inputs)
        for i, key in enumerate(inputs):
            save_file({f"data{i}": inputs[key]}, f"{prefix}.data{i}.safetensors")
        export_onnx(model, folder, inputs, prefix + ".onnx")
        outputs = {}
        for framework in ("dlc", "torch", "ort"):
            python, env = peer_env(args, framework)
            extra = ["--save-compiled", prefix + ".dlc"] if framework == "dlc" else []
            run([python, peer, "--model", model, "--framework", framework, "--checkpoint", folder,
                 "--inputs", prefix + ".npz", "--onnx", prefix + ".onnx",
                 "--output", f"{prefix}.{framework}.npy", "--repeats", "1"] + extra, env)
            outputs[framework] = onp.load(f"{prefix}.{framework}.npy")
        scale = float(onp.abs(outputs["torch"]).max())
        for framework in ("dlc", "ort"):
            error = float(onp.abs(outputs[framework] - outputs["torch"]).max()) / scale
            if error > 1e-4:
                sys.exit(f"{model} batch {batch}: {framework} differs from PyTorch by {error:.2e}")
        print(f"# {model} batch {batch}: dlc, PyTorch and ONNX Runtime agree", flush=True)
        cases[batch] = (prefix, len(inputs))
    times = collections.defaultdict(list)
    memory = collections.defaultdict(list)
    frameworks = ("dlc", "dlc-run", "torch", "torch-compile", "ort")
    for round_ in range(args.rounds):
        for batch, (prefix, count) in cases.items():
            for framework in frameworks:
                python, env = peer_env(args, framework)
                if framework == "dlc-run":
                    # Under GNU time, which forks dlc-run from its own small process:
                    # its %M is dlc-run's peak alone (ru_maxrss carries a forking
                    # parent's across exec, and this driver holds PyTorch).
                    command = ["/usr/bin/time", "-f", "peak_kib=%M", dlc_run, prefix + ".dlc",
                               "--benchmark", str(args.bert_repeats)]
                    # A model file names one input "data", several data0, data1, ...
                    for i in range(count):
                        name = f"data{i}" if count > 1 else "data"
                        command += ["--input", f"{name}={prefix}.data{i}.safetensors"]
                    done = subprocess.run(command, capture_output=True, text=True, env=env)
                    if done.returncode:
                        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
                    ms = float(re.search(r"latency p50 ([0-9.]+) ms", done.stdout).group(1))
                    peak = int(re.search(r"peak_kib=([0-9]+)", done.stderr).group(1)) / 1024
                else:
                    result, _ = run(
                        [python, peer, "--model", model, "--framework", framework,
                         "--checkpoint", folder, "--inputs", prefix + ".npz", "--onnx",
                         prefix + ".onnx", "--repeats", str(args.bert_repeats), "--threads",
                         str(args.threads)], env)
                    ms, peak = result["ms"], result["peak_mib"]
                times[(batch, framework)].append(ms)
                memory[(batch, framework)].append(peak)
                print(f"round {round_ + 1}: {model} batch {batch} {framework}: {ms:.1f} ms, "
                      f"peak {peak:.0f} MiB", flush=True)
    print(f"\n{spec['title']}, {args.threads} threads, median of {args.rounds} rounds: "
          f"ms (peak MiB)")
    print("| batch | " + " | ".join(frameworks) + " | dlc / ORT | dlc-run / ORT |")
    print("|---:|" + "---:|" * (len(frameworks) + 2))
    for batch in cases:
        med = {f: statistics.median(times[(batch, f)]) for f in frameworks}
        mem = {f: statistics.median(memory[(batch, f)]) for f in frameworks}
        print(f"| {batch} | " + " | ".join(f"{med[f]:.1f} ({mem[f]:.0f})" for f in frameworks) +
              f" | {med['dlc'] / med['ort']:.2f} | {med['dlc-run'] / med['ort']:.2f} |")


def gpt2_part(args, work):
    folder = os.path.join(work, "gpt2")
    random_checkpoint(folder, "gpt2")
    frameworks = ("dlc-eager", "dlc-hybrid", "dlc-step", "torch", "torch-compile")
    times = collections.defaultdict(list)
    memory = collections.defaultdict(list)
    for round_ in range(args.rounds):
        for length in args.gpt2_lengths:
            for framework in frameworks:
                python, env = peer_env(args, framework)
                result, _ = run([python, os.path.join(HERE, "peers", "gpt2_step.py"),
                                    "--framework", framework, "--checkpoint", folder,
                                    "--batch", "4", "--length", str(length), "--repeats",
                                    str(args.gpt2_repeats), "--threads", str(args.threads)], env)
                peak = result["peak_mib"]
                times[(length, framework)].append(result["tokens_per_s"])
                memory[(length, framework)].append(peak)
                print(f"round {round_ + 1}: GPT-2 L={length} {framework}: "
                      f"{result['tokens_per_s']:.0f} tokens/s, peak {peak:.0f} MiB", flush=True)
    print(f"\nGPT-2 124M training step, batch 4, {args.threads} threads, median of "
          f"{args.rounds} rounds: tokens/s (peak MiB)")
    print("| L | " + " | ".join(frameworks) + " | step / torch | step / compile | step / eager |")
    print("|---:|" + "---:|" * (len(frameworks) + 3))
    for length in args.gpt2_lengths:
        med = {f: statistics.median(times[(length, f)]) for f in frameworks}
        mem = {f: statistics.median(memory[(length, f)]) for f in frameworks}
        print(f"| {length} | " + " | ".join(f"{med[f]:.0f} ({mem[f]:.0f})" for f in frameworks) +
              f" | {med['dlc-step'] / med['torch']:.2f} | "
              f"{med['dlc-step'] / med['torch-compile']:.2f} | "
              f"{med['dlc-step'] / med['dlc-eager']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["attention", "bert", "gpt2", "vit"],
                        choices=["attention", "bert", "gpt2", "vit"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="attention calls timed")
    parser.add_argument("--bert-repeats", type=int, default=20,
                        help="BERT and ViT calls timed")
    parser.add_argument("--gpt2-repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--gpt2-lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(),
                                                       "dlc-compare-transformers"),
                        help="where the random checkpoints and model files are kept")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if "attention" in args.parts:
        attention_part(args)
    if "bert" in args.parts:
        inference_part(args, args.work, "bert")
    if "gpt2" in args.parts:
        gpt2_part(args, args.work)
    if "vit" in args.parts:
        inference_part(args, args.work, "vit")


if __name__ == "__main__":
    main()
