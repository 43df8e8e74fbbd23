"""The seed's LeafNetwork and its layers in a peer framework, timed like
bench/leafnet_step.cpp times dlc: forward + backward, median of repeats after warm-up,
one JSON line per measurement.

    bench/.venv/bin/python bench/peers/leafnet.py torch|mxnet [--threads N] [batch ...]
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("framework", choices=["torch", "mxnet"])
    parser.add_argument("batches", type=int, nargs="*", default=[4, 32])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--device", default="cpu",
                        help="torch only: cpu (default) or cuda (GPU check, scripts/gpu-check.sh)")
    parser.add_argument("--steps-only", action="store_true",
                        help="only the whole-network steps, not the single layers")
    parser.add_argument("--train-step", action="store_true",
                        help="only the whole training step: forward, loss, backward and an "
                             "SGD update with momentum 0.9 (bench train_step; torch.compile's "
                             "as train_step_compiled), what dlc-bench-trainstep's train_step does")
    parser.add_argument("--no-compiled", action="store_true",
                        help="skip leafnet_step_hybrid (torch.compile / MXNet hybridize)")
    return parser.parse_args()


def report(framework, bench, batch, seconds):
    print(json.dumps({"framework": framework, "bench": bench, "batch": batch,
                      "seconds": round(seconds, 6),
                      "samples_per_s": round(batch / seconds, 2)}), flush=True)


def median_time(work, sync, warmup, repeats):
    for _ in range(warmup):
        work()
        sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_torch(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    def conv_block(cin, cout):
        return [nn.Conv2d(cin, cout, 2), nn.ReLU(), nn.MaxPool2d(4, 2), nn.BatchNorm2d(cout)]

    def make_net():
        return nn.Sequential(*conv_block(3, 32), *conv_block(32, 64), *conv_block(64, 128),
                             nn.Flatten(), nn.Linear(21632, 100), nn.ReLU(), nn.Dropout(0.2),
                             nn.Linear(100, 10), nn.ReLU(), nn.Dropout(0.2), nn.Linear(10, 2))

    device = torch.device(args.device)
    if device.type == "cuda":
        # Strict float32, as dlc's GPU kernels default to (no TF32).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        sync = torch.cuda.synchronize
    else:
        sync = lambda: None  # eager CPU PyTorch is synchronous
    if args.train_step:
        for batch in args.batches:
            x = (torch.rand(batch, 3, 128, 128) * 2 - 1).to(device)
            labels = torch.randint(0, 2, (batch,)).to(device)
            for compiled in ([False] if args.no_compiled else [False, True]):
                net = make_net().to(device)
                model = torch.compile(net) if compiled else net
                optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)

                def train_step():
                    optimizer.zero_grad(set_to_none=True)
                    F.cross_entropy(model(x), labels).backward()
                    optimizer.step()
                start = time.perf_counter()
                train_step()
                name = "train_step_compiled" if compiled else "train_step"
                print(f"# torch {name}, batch {batch}: first step "
                      f"{time.perf_counter() - start:.1f} s", flush=True)
                report("torch", name, batch,
                       median_time(train_step, sync, 1, 5 if batch >= 32 else 10))
        return
    for batch in args.batches:
        repeats = 5 if batch >= 32 else 10
        if device.type == "cuda":
            repeats *= 4
        x = (torch.rand(batch, 3, 128, 128) * 2 - 1).to(device)
        if not args.steps_only:
            conv = nn.Conv2d(3, 32, 2).to(device)
            xg = x.clone().requires_grad_(True)

            def conv_step():
                y = conv(xg)
                y.backward(y.detach())
            report("torch", "conv2d_fwd_bwd", batch, median_time(conv_step, sync, 1, repeats))
            relu_out = torch.relu(conv(x)).detach().requires_grad_(True)

            def pool_step():
                y = F.max_pool2d(relu_out, 4, 2)
                y.backward(y.detach())
            report("torch", "max_pool2d_fwd_bwd", batch, median_time(pool_step, sync, 1, repeats))
            pooled = F.max_pool2d(relu_out.detach(), 4, 2).requires_grad_(True)
            bn = nn.BatchNorm2d(32).to(device)

            def bn_step():
                y = bn(pooled)
                y.backward(y.detach())
            report("torch", "batch_norm_fwd_bwd", batch, median_time(bn_step, sync, 1, repeats))
            small = torch.rand(4, device=device) * 2 - 1
            increment = torch.ones(4, device=device)

            def small_ops():
                acc = small
                for _ in range(100):
                    acc = acc + increment
            report("torch", "small_op_x100", batch, median_time(small_ops, sync, 1, repeats))
            flat = (torch.rand(batch, 21632, device=device) * 2 - 1).requires_grad_(True)
            dense = nn.Linear(21632, 100).to(device)

            def dense_step():
                y = dense(flat)
                y.backward(y.detach())
            report("torch", "dense_fwd_bwd", batch, median_time(dense_step, sync, 1, repeats))

        net = make_net().to(device).train()
        labels = torch.randint(0, 2, (batch,)).to(device)

        def step():
            for p in net.parameters():
                p.grad = None
            loss = F.cross_entropy(net(x), labels, reduction="none")
            loss.sum().backward()
        report("torch", "leafnet_step", batch, median_time(step, sync, 2, repeats))
        if args.no_compiled:
            continue
        # torch.compile (inductor): what a PyTorch user does to compile the same step.
        compiled = torch.compile(net)

        def compiled_step():
            for p in net.parameters():
                p.grad = None
            loss = F.cross_entropy(compiled(x), labels, reduction="none")
            loss.sum().backward()
        start = time.perf_counter()
        compiled_step()
        print(f"# torch.compile, batch {batch}: first step (compile) "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        report("torch", "leafnet_step_hybrid", batch, median_time(compiled_step, sync, 1, repeats))


def run_mxnet(args):
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import mxnet as mx
    from mxnet import autograd, gluon, np, npx
    from mxnet.gluon import nn
    npx.set_np()
    mx.random.seed(0)

    def conv_block(filters):
        block = nn.HybridSequential()
        block.add(nn.Conv2D(channels=filters, kernel_size=2, activation="relu"),
                  nn.MaxPool2D(pool_size=4, strides=2), nn.BatchNorm())
        return block

    def dense_block(neurons):
        block = nn.HybridSequential()
        block.add(nn.Dense(neurons, activation="relu"), nn.Dropout(0.2))
        return block

    class LeafNetwork(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2, self.conv3 = conv_block(32), conv_block(64), conv_block(128)
            self.flatten = nn.Flatten()
            self.dense1, self.dense2 = dense_block(100), dense_block(10)
            self.dense3 = nn.Dense(2)

        def forward(self, batch):
            batch = self.conv3(self.conv2(self.conv1(batch)))
            return self.dense3(self.dense2(self.dense1(self.flatten(batch))))

    sync = npx.waitall
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    if args.train_step:
        for batch in args.batches:
            x = np.random.uniform(-1, 1, size=(batch, 3, 128, 128))
            labels = np.random.randint(0, 2, size=(batch,))
            net = LeafNetwork()
            net.initialize(mx.init.Xavier())
            net.hybridize(static_alloc=True, static_shape=True)
            trainer = gluon.Trainer(net.collect_params(), "sgd",
                                    {"learning_rate": 0.05, "momentum": 0.9})

            def train_step():
                with autograd.record():
                    loss = loss_fn(net(x), labels)
                loss.backward()
                trainer.step(batch)
            report("mxnet", "train_step", batch,
                   median_time(train_step, sync, 2, 5 if batch >= 32 else 10))
        return
    for batch in args.batches:
        repeats = 5 if batch >= 32 else 10
        x = np.random.uniform(-1, 1, size=(batch, 3, 128, 128))

        def layer_step(block, data):
            def work():
                with autograd.record():
                    y = block(data)
                y.backward()
            return work
        if not args.steps_only:
            conv = nn.Conv2D(32, 2)
            conv.initialize()
            xg = x.copy()
            xg.attach_grad()
            report("mxnet", "conv2d_fwd_bwd", batch,
                   median_time(layer_step(conv, xg), sync, 1, repeats))
            relu_out = npx.relu(conv(x))
            relu_out.attach_grad()
            pool = nn.MaxPool2D(pool_size=4, strides=2)
            report("mxnet", "max_pool2d_fwd_bwd", batch,
                   median_time(layer_step(pool, relu_out), sync, 1, repeats))
            pooled = pool(relu_out)
            pooled.attach_grad()
            bn = nn.BatchNorm()
            bn.initialize()
            report("mxnet", "batch_norm_fwd_bwd", batch,
                   median_time(layer_step(bn, pooled), sync, 1, repeats))
            small = np.random.uniform(-1, 1, size=(4,))
            increment = np.ones((4,))

            def small_ops():
                acc = small
                for _ in range(100):
                    acc = acc + increment
            report("mxnet", "small_op_x100", batch, median_time(small_ops, sync, 1, repeats))
            flat = np.random.uniform(-1, 1, size=(batch, 21632))
            flat.attach_grad()
            dense = nn.Dense(100)
            dense.initialize()
            report("mxnet", "dense_fwd_bwd", batch,
                   median_time(layer_step(dense, flat), sync, 1, repeats))

        net = LeafNetwork()
        net.initialize(mx.init.Xavier())
        labels = np.random.randint(0, 2, size=(batch,))

        def step():
            with autograd.record():
                loss = loss_fn(net(x), labels)
            loss.backward()
        report("mxnet", "leafnet_step", batch, median_time(step, sync, 2, repeats))
        if args.no_compiled:
            continue
        hybrid = LeafNetwork()
        hybrid.initialize(mx.init.Xavier())
        hybrid.hybridize(static_alloc=True, static_shape=True)

        def hybrid_step():
            with autograd.record():
                loss = loss_fn(hybrid(x), labels)
            loss.backward()
        report("mxnet", "leafnet_step_hybrid", batch, median_time(hybrid_step, sync, 2, repeats))


if __name__ == "__main__":
    arguments = parse()
    {"torch": run_torch, "mxnet": run_mxnet}[arguments.framework](arguments)
