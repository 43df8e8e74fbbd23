"""One BERT inference measurement in this process, printed as JSON: dlc (the text zoo's
BertModel from a Hugging Face folder, hybridized), PyTorch eager or torch.compile
(`transformers`' BertModel, SDPA attention), or ONNX Runtime (the ONNX file
compare-transformers.py exported). Inputs come from an .npz (ids, token_types, mask);
--output writes the first output (the sequence's features) for the agreement check;
--save-compiled (dlc) writes the hybridized network as a model file for dlc-run.

    python bert.py --framework dlc --checkpoint DIR --inputs IN.npz [--repeats 20]
"""
import argparse
import json
import os

import numpy as onp

from peak_memory import peak_mib
from timing import median_seconds


def main():
    parser = argparse.ArgumentParser()
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
    ids, types, mask = data["ids"], data["token_types"], data["mask"]
    if args.framework == "dlc":
        from dlc import np, npx
        from dlc.gluon.model_zoo import text
        net = text.from_pretrained(args.checkpoint)
        net.hybridize()
        x = (np.array(ids), np.array(types), np.array(mask))

        def call():
            out = net(*x)
            npx.waitall()
            return out[0]
        first = call().asnumpy()
        if args.save_compiled:
            net.save_compiled(args.save_compiled)
    elif args.framework.startswith("torch"):
        import torch
        import transformers
        torch.set_num_threads(args.threads)
        model = transformers.BertModel.from_pretrained(args.checkpoint,
                                                       attn_implementation="sdpa").eval()
        if args.framework == "torch-compile":
            model = torch.compile(model)
        x = [torch.from_numpy(t) for t in (ids, types, mask)]

        def call():
            with torch.inference_mode():
                return model(input_ids=x[0], token_type_ids=x[1],
                             attention_mask=x[2]).last_hidden_state
        first = call().numpy()
    else:
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(args.onnx, options,
                                               providers=["CPUExecutionProvider"])
        feeds = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}

        def call():
            return session.run(None, feeds)[0]
        first = call()
    if args.output:
        onp.save(args.output, first)
    seconds = median_seconds(call, 3, args.repeats)
    print(json.dumps({"ms": seconds * 1000, "peak_mib": peak_mib(), "pid": os.getpid()}))


if __name__ == "__main__":
    main()
