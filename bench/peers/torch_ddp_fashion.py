"""dlc-train's network (leafnet::fashion_network, examples/LeafNetwork.h) trained on
Fashion-MNIST with PyTorch DistributedDataParallel over gloo, on CPU: the peer of
dlc-train run as MPI processes. Same data, preprocessing, global batch, optimizer (Adam,
lr 0.001) and per-epoch shuffle split over the processes; the first epoch is warm-up and
the last epoch's time is reported as one JSON line (rank 0), with rank 0's time in
forward (+ loss), backward (which includes DDP's gradient all-reduce) and optimizer step.

    bench/.venv/bin/python bench/peers/torch_ddp_fashion.py [--processes 2] [--epochs 2] [--limit 6400] [--batch-size 64]
"""
import argparse
import gzip
import json
import os
import socket
import time

import numpy
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DistributedSampler


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads per process (default: cpu count / processes)")
    parser.add_argument("--epochs", type=int, default=2,
                        help="epochs to train; the first is warm-up unless it is the only one")
    parser.add_argument("--limit", type=int, default=6400,
                        help="train on the first N images (0: all 60000)")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="samples per step over all processes")
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    if args.processes < 1 or args.epochs < 1 or args.limit < 0:
        parser.error("--processes and --epochs must be positive, --limit 0 or positive")
    if args.batch_size % args.processes:
        parser.error(f"--batch-size {args.batch_size} must be a multiple of "
                     f"--processes {args.processes} (each process gets an equal share)")
    if args.threads <= 0:
        args.threads = max(1, (os.cpu_count() or 1) // args.processes)
    return args


def read_idx(path, count):
    """The first `count` items (0: all) of a gzip-compressed IDX file of uint8, shaped by its
    header: magic 0x0000 0x08 (uint8) <rank>, then one big-endian int32 per dimension."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[:3] != b"\0\0\x08":
        raise SystemExit(f"{path}: not an IDX file of uint8")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    values = numpy.frombuffer(data, dtype=numpy.uint8, offset=4 + 4 * rank).reshape(dims)
    return values if count == 0 else values[:count]


def load_fashion(args):
    """Training images as dlc-train prepares them: ToTensor + Normalize(0.2860, 0.3530)."""
    images = read_idx(os.path.join(args.data_dir, "train-images-idx3-ubyte.gz"), args.limit)
    labels = read_idx(os.path.join(args.data_dir, "train-labels-idx1-ubyte.gz"), args.limit)
    x = torch.from_numpy(images.astype(numpy.float32)).reshape(-1, 1, 28, 28)
    x = (x / 255.0 - 0.2860) / 0.3530
    return x, torch.from_numpy(labels.astype(numpy.int64))


def fashion_network():
    """leafnet::fashion_network with Gluon's semantics: BatchNorm after the pooling, its
    momentum 0.9 (MXNet: the running statistics' weight) being torch's 0.1."""
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)]

    net = nn.Sequential(*block(1, 32), *block(32, 64), *block(64, 128), nn.Flatten(),
                        nn.Linear(128 * 3 * 3, 100), nn.ReLU(), nn.Dropout(0.2),  # 28->14->7->3
                        nn.Linear(100, 10), nn.ReLU(), nn.Dropout(0.2), nn.Linear(10, 10))
    for layer in net:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return net


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, x, y):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # All processes are on this machine: gloo on loopback, not on whatever interface the
    # host name resolves to (which may be none, in a container).
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.processes)
    torch.manual_seed(args.seed)  # DDP broadcasts rank 0's parameters anyway
    model = DistributedDataParallel(fashion_network().train())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    # The sampler shuffles all indices with one seeded generator per epoch and gives rank r
    # every processes-th one from r, so consecutive runs of `local` indices of each rank
    # together make one global batch of consecutive shuffled samples.
    sampler = DistributedSampler(range(len(y)), num_replicas=args.processes, rank=rank,
                                 shuffle=True, seed=args.seed, drop_last=True)
    local = args.batch_size // args.processes
    steps = len(sampler) // local  # full global batches only: len(y) // batch_size

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        order = torch.tensor(list(sampler))
        forward = backward = step = 0.0
        dist.barrier()
        start = time.perf_counter()
        for i in range(steps):
            index = order[i * local:(i + 1) * local]
            data, label = x[index], y[index]
            t0 = time.perf_counter()
            loss = F.cross_entropy(model(data), label)
            t1 = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # returns once DDP's bucketed all-reduces have finished
            t2 = time.perf_counter()
            optimizer.step()
            t3 = time.perf_counter()
            forward, backward, step = forward + t1 - t0, backward + t2 - t1, step + t3 - t2
        dist.barrier()
        seconds = time.perf_counter() - start

    if rank == 0:
        samples = steps * args.batch_size
        print(json.dumps({"framework": "torch-ddp-gloo", "processes": args.processes,
                          "threads_per_process": args.threads, "batch": args.batch_size,
                          "samples": samples, "seconds": round(seconds, 4),
                          "samples_per_s": round(samples / seconds, 2),
                          "forward_s": round(forward, 4), "backward_s": round(backward, 4),
                          "step_s": round(step, 4), "last_loss": round(loss.item(), 4),
                          "torch": torch.__version__}), flush=True)
    dist.destroy_process_group()


def main():
    args = parse()
    x, y = load_fashion(args)
    if args.batch_size > len(y):
        raise SystemExit(f"--batch-size {args.batch_size} is larger than the {len(y)} "
                         "training samples: no full batch to train on")
    # The tensors go to the workers through shared memory (torch.multiprocessing).
    mp.spawn(worker, args=(args, free_port(), x, y), nprocs=args.processes, join=True)


if __name__ == "__main__":
    main()
