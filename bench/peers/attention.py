"""One attention measurement in this process, printed as JSON: dlc (its Python module) or
PyTorch's scaled_dot_product_attention, causal, float32, (1, 12, L, 64) as GPT-2's heads;
forward alone or forward and backward. Run by bench/compare-transformers.py, which reads
the process's peak resident memory when it exits; `baseline_mib` is the peak after the
inputs exist, so peak - baseline is what the attention itself held."""
import argparse
import json
import resource
import statistics
import time

import numpy as onp


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=["dlc", "torch"], required=True)
    parser.add_argument("--length", type=int, required=True)
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rng = onp.random.RandomState(0)
    shape = (1, 12, args.length, 64)
    q, k, v, w = (rng.uniform(-1, 1, shape).astype(onp.float32) for _ in range(4))
    if args.framework == "dlc":
        from dlc import autograd, np, npx
        q, k, v, w = (np.array(t) for t in (q, k, v, w))
        for t in (q, k, v):
            t.attach_grad()

        def step():
            if args.backward:
                with autograd.record():
                    out = npx.scaled_dot_product_attention(q, k, v, causal=True)
                    (out * w).sum().backward()
                q.grad.wait_to_read()
                k.grad.wait_to_read()
                v.grad.wait_to_read()
            else:
                npx.scaled_dot_product_attention(q, k, v, causal=True).wait_to_read()
    else:
        import torch
        torch.set_num_threads(args.threads)
        q, k, v, w = (torch.tensor(t) for t in (q, k, v, w))
        for t in (q, k, v):
            t.requires_grad_(args.backward)

        def step():
            if args.backward:
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                (out * w).sum().backward()
                for t in (q, k, v):
                    t.grad = None
            else:
                with torch.no_grad():
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step()  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"ms": statistics.median(times), "baseline_mib": baseline}))


if __name__ == "__main__":
    main()
