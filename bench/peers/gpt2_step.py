"""One GPT-2 training-step measurement in this process, printed as JSON: the language-
model loss (cross entropy of every position's logits against a label), backward and an
Adam update, at batch B and sequence L. dlc: eager (the seed's loop), hybridized (the
same loop, the network compiled) or the compiled step (TrainStep on one device);
PyTorch: eager or torch.compile (`transformers`' GPT2LMHeadModel, SDPA attention). Both
start from the same Hugging Face folder; dropout as its config says.

    python gpt2_step.py --framework dlc-step --checkpoint DIR --batch 4 --length 128
"""
import argparse
import json
import os

import numpy as onp

from peak_memory import peak_mib
from timing import median_seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", required=True,
                        choices=["dlc-eager", "dlc-hybrid", "dlc-step", "torch", "torch-compile"])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rng = onp.random.RandomState(0)
    ids = rng.randint(0, 50257, (args.batch, args.length + 1)).astype(onp.int64)
    x, y = ids[:, :-1].copy(), ids[:, 1:].copy()
    if args.framework.startswith("dlc"):
        from dlc import autograd, cpu, gluon, np, npx
        from dlc.gluon.model_zoo import text
        net = text.from_pretrained(args.checkpoint)
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-4})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        dx, dy = np.array(x), np.array(y)
        if args.framework == "dlc-step":
            net.hybridize()
            step = gluon.TrainStep(net, loss_fn, trainer, devices=[cpu(0)])

            def call():
                step(dx, dy).asnumpy()
        else:
            if args.framework == "dlc-hybrid":
                net.hybridize()

            def call():
                with autograd.record():
                    loss = loss_fn(net(dx), dy)
                loss.backward()
                trainer.step(args.batch)
                npx.waitall()
    else:
        import torch
        import transformers
        torch.set_num_threads(args.threads)
        model = transformers.GPT2LMHeadModel.from_pretrained(args.checkpoint,
                                                             attn_implementation="sdpa").train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)

        def train_step():
            logits = model(input_ids=tx).logits
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                     ty.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            return loss
        step_fn = torch.compile(train_step) if args.framework == "torch-compile" else train_step

        def call():
            step_fn().item()
    seconds = median_seconds(call, 2, args.repeats)
    print(json.dumps({"ms": seconds * 1000, "tokens_per_s": args.batch * args.length / seconds,
                      "peak_mib": peak_mib(), "pid": os.getpid()}))


if __name__ == "__main__":
    main()
