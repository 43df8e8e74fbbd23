"""Data-parallel training of the LeafNetwork-style network on Fashion-MNIST, the tutorial's
multi-device loop (split_and_load, record, backward, trainer.step) written in Python on dlc.

    python3 examples/python/train_fashion_mnist.py --epochs 2 --devices cpu:0,cpu:1

With the same settings (and seed) it computes what `dlc-train --compiled-step=false`
computes, number for number: the same network, initialization, data order and ops.
--compiled-step runs each step as one compiled data-parallel program instead (gluon.TrainStep).

As a job of several processes (mpirun -np 2 python3 train_fashion_mnist.py --devices
cpu:0,cpu:1), each process takes its block of the devices and its share of every batch,
and Trainer.step (or the compiled step) sums the gradients over all of them: the same
parameters as one process with every device. Process 0 alone prints and saves.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dlc  # noqa: E402
from dlc import autograd, dist, gluon, np, npx  # noqa: E402
from leafnet import fashion_network  # noqa: E402


def parse_devices(text):
    if not text:
        gpus = [npx.gpu(i) for i in range(npx.num_gpus())]
        return gpus or [npx.cpu(0), npx.cpu(1)]
    devices = []
    for item in text.split(","):
        kind, _, number = item.partition(":")
        if kind not in ("cpu", "gpu") or not (number or "0").isdigit():
            raise SystemExit(f"--devices: '{item}' is not cpu:N or gpu:N")
        devices.append((npx.cpu if kind == "cpu" else npx.gpu)(int(number or 0)))
    return devices


def prepare(images):
    """ToTensor + Normalize on a whole batch: (B, 28, 28, 1) uint8 -> (B, 1, 28, 28)."""
    x = np.transpose(images.astype("float32"), (0, 3, 1, 2))
    return (x * (1.0 / 255.0) - 0.2860) * (1.0 / 0.3530)


def evaluate(net, loader, devices, processes=1):
    accuracy = gluon.metric.Accuracy()
    for data, label in loader:
        used = devices[:min(len(devices), label.shape[0])]
        inputs = gluon.utils.split_and_load(prepare(data), used, even_split=False)
        labels = gluon.utils.split_and_load(label, used, even_split=False)
        accuracy.update(labels, [net(x) for x in inputs])
    correct, counted = accuracy.sum_metric, accuracy.num_inst
    if processes > 1:
        correct, counted = dist.all_reduce(
            [np.array([correct, counted], dtype="float32")]).asnumpy().tolist()
    return correct / counted


def train(epochs=1, batch_size=64, devices=None, lr=0.001, optimizer="adam", limit=0, seed=1,
          out="dlc-python-train-out", data_root="/usr/share/datasets/fashion-mnist",
          hybridize=True, compiled_step=False, log=print):
    """Trains and returns (train accuracy, train loss, test accuracy) of the last epoch."""
    dist.init()  # under mpirun: joins the job; alone: a job of one
    root, processes = dist.rank() == 0, dist.size()
    job_devices = devices or parse_devices("")
    devices = dist.local_devices(job_devices)  # this process's block
    if not root:
        log = lambda *args: None  # noqa: E731 (process 0 speaks for the job)
    else:
        os.makedirs(out, exist_ok=True)
    np.random.seed(seed)
    full_train = gluon.data.vision.FashionMNIST(data_root, train=True)
    test_set = gluon.data.vision.FashionMNIST(data_root, train=False)
    train_set = full_train
    if 0 < limit < len(full_train):
        train_set = gluon.data.ArrayDataset(full_train.images[:limit], full_train.labels[:limit])
    sample_batch = prepare(full_train.images[:2])
    train_loader = gluon.data.DataLoader(train_set, batch_size, shuffle=True,
                                         last_batch="discard", num_workers=2, prefetch=4,
                                         seed=seed, pin_memory=not devices[0].device_type == "cpu")
    # Each process evaluates its share of every test batch, as its devices would alone.
    test_loader = gluon.data.DataLoader(test_set, -(-500 // processes) * processes, num_workers=2)
    if processes > 1:
        train_loader.shard(dist.rank(), processes)
        test_loader.shard(dist.rank(), processes)
    log(f"Fashion-MNIST, {len(train_set)} training and {len(test_set)} test images, batch "
        f"{batch_size} on {' '.join(str(d) for d in job_devices)} ({dist.describe()}), "
        f"{optimizer} lr {lr}, {epochs} epochs")

    net = fashion_network()
    net.initialize(dlc.init.Xavier(), device=devices, force_reinit=True)
    net.forward(sample_batch.as_in_context(devices[0]))  # settles the deferred shapes
    if processes > 1:
        # Process 0's initial values everywhere; the other processes' devices start their
        # random streams afresh, as devices that initialized nothing do in one process.
        dist.broadcast_parameters(net.collect_params())
        if not root:
            for device in devices:
                np.random.seed(seed, device=device)
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), optimizer, {"learning_rate": lr})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    step = gluon.TrainStep(net, loss_fn, trainer, devices) if compiled_step else None

    for epoch in range(1, epochs + 1):
        tic = time.time()
        accuracy = gluon.metric.Accuracy()
        loss_sum, seen = 0.0, 0
        total = len(train_loader) * batch_size
        for index, (data, label) in enumerate(train_loader):
            if step is not None:
                losses = [step(prepare(data), label)]
                outputs, labels = [step.last_output], [label]
            else:
                data_list = gluon.utils.split_and_load(prepare(data), devices)
                labels = gluon.utils.split_and_load(label, devices)
                with autograd.record():
                    outputs = [net(x) for x in data_list]
                    losses = [loss_fn(o, l) for o, l in zip(outputs, labels)]
                for l in losses:
                    l.backward()
                trainer.step(batch_size)
            loss_sum += sum(float(np.sum(l)) for l in losses)
            accuracy.update(labels, outputs)
            seen += batch_size
            if (index + 1) % max(1, len(train_loader) // 10) == 0:
                rate = seen / (time.time() - tic)
                log(f"Epoch {epoch} {seen}/{total}  {rate:.0f} samples/s  loss "
                    f"{loss_sum / accuracy.num_inst:.4f}  acc {accuracy.get()[1]:.4f}")
        correct, counted = accuracy.sum_metric, accuracy.num_inst
        if processes > 1:  # the whole job's loss and accuracy
            loss_sum, correct, counted = dist.all_reduce(
                [np.array([loss_sum, correct, counted], dtype="float32")]).asnumpy().tolist()
        train_accuracy, train_loss = correct / counted, loss_sum / seen
        log(f"[Epoch {epoch}] training: accuracy={train_accuracy:.4f} loss={train_loss:.4f}")
        log(f"[Epoch {epoch}] time cost: {time.time() - tic:.1f} s")
        if root:  # the optimizer's state too: with both, a run can go on exactly
            (step or trainer).save_states(os.path.join(out, "leafnet.states"))
            net.save_parameters(os.path.join(out, "leafnet.safetensors"))
        test_accuracy = evaluate(net, test_loader, devices, processes)
        log(f"[Epoch {epoch}] test: accuracy={test_accuracy:.4f}")
    if hybridize and root:
        net.save_compiled(os.path.join(out, "model.dlc"))
    return train_accuracy, train_loss, test_accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--devices", default="", help="cpu:0,cpu:1 or gpu:0,gpu:1 (default: "
                        "every GPU, else cpu:0,cpu:1)")
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--optimizer", default="adam", choices=["sgd", "nag", "adam"])
    parser.add_argument("--limit", type=int, default=0, help="train on the first N images")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="dlc-python-train-out")
    parser.add_argument("--data-root", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--no-hybridize", action="store_true", help="run the network eagerly")
    parser.add_argument("--compiled-step", action="store_true",
                        help="one compiled data-parallel program per step (gluon.TrainStep)")
    args = parser.parse_args()
    train(args.epochs, args.batch_size, parse_devices(args.devices), args.lr, args.optimizer,
          args.limit, args.seed, args.out, args.data_root, not args.no_hybridize,
          args.compiled_step)


if __name__ == "__main__":
    main()
