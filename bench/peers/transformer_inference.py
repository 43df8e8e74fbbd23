"""One transformer inference measurement in this process, printed as JSON, of BERT-base
(the sequence's features for ids, token types and a mask) or ViT-B/16 (logits for
images): dlc (the zoo's network from a Hugging Face folder through
text.from_pretrained, hybridized), PyTorch eager or torch.compile (`transformers`' own
model, SDPA attention), or ONNX Runtime (the ONNX file compare-transformers.py
exported). Inputs come from an .npz (ids, token_types, mask; or images); --output
writes the first output for the agreement check; --save-compiled (dlc) writes the
hybridized network as a model file for dlc-run.

    python transformer_inference.py --model bert --framework dlc --checkpoint DIR \\
        --inputs IN.npz [--repeats 20]
"""
import argparse
import json
import os

import numpy as onp

from peak_memory import peak_mib
from timing import median_seconds

# The inputs of each model, in the order its networks take them (and the ONNX names).
INPUTS = {"bert": (("ids", "input_ids"), ("token_types", "token_type_ids"),
                   ("mask", "attention_mask")),
          "vit": (("images", "pixel_values"),)}


def dlc_call(args, arrays):
    from dlc import np, npx
    from dlc.gluon.model_zoo import text
    net = text.from_pretrained(args.checkpoint)
    net.hybridize()
    x = [np.array(a) for a in arrays]

    def call():
        out = net(*x)
        npx.waitall()
        return out[0] if isinstance(out, tuple) else out
    first = call().asnumpy()
    if args.save_compiled:
        net.save_compiled(args.save_compiled)
    return call, first


def torch_call(args, arrays):
    import torch
    import transformers
    torch.set_num_threads(args.threads)
    kind = transformers.BertModel if args.model == "bert" else \
        transformers.ViTForImageClassification
    model = kind.from_pretrained(args.checkpoint, attn_implementation="sdpa").eval()
    if args.framework == "torch-compile":
        model = torch.compile(model)
    x = {onnx_name: torch.from_numpy(a) for (_, onnx_name), a in zip(INPUTS[args.model], arrays)}

    def call():
        with torch.inference_mode():
            out = model(**x)
            return out.last_hidden_state if args.model == "bert" else out.logits
    return call, call().numpy()


def ort_call(args, arrays):
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(args.onnx, options, providers=["CPUExecutionProvider"])
    feeds = {onnx_name: a for (_, onnx_name), a in zip(INPUTS[args.model], arrays)}

    def call():
        return session.run(None, feeds)[0]
    return call, call()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=list(INPUTS), required=True)
    parser.add_argument("--framework", choices=["dlc", "torch", "torch-compile", "ort"],
                        required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--onnx")
    parser.add_argument("--output")
    parser.add_argument("--save-compiled")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    data = onp.load(args.inputs)
    arrays = [data[key] for key, _ in INPUTS[args.model]]
    make = {"dlc": dlc_call, "ort": ort_call}.get(args.framework, torch_call)
    call, first = make(args, arrays)
    if args.output:
        onp.save(args.output, first)
    seconds = median_seconds(call, 3, args.repeats)
    print(json.dumps({"ms": seconds * 1000, "peak_mib": peak_mib(), "pid": os.getpid()}))


if __name__ == "__main__":
    main()
