"""The peers of bench/zoo.cpp (dlc-bench-zoo): one model-zoo network predicting or
training, in MXNet 1.9.1 (its model zoo, the same structure and names as dlc's),
PyTorch (torchvision's architecture of the same name, eager or torch.compile) or ONNX
Runtime (torchvision's model exported by torch.onnx); random weights, 224x224 inputs,
1000 classes. One JSON line: the median of the repeats after a warm-up.

    bench/.venv/bin/python bench/peers/zoo.py --framework mxnet|torch|torch_compile|onnxruntime
        --network resnet50_v1|mobilenetv2_1.0 --only BENCH --batch B [--repeats N] [--threads N]

Benches: infer_eager, infer_hybrid (MXNet: hybridize(static_alloc, static_shape)),
train_eager, train_hybrid (record, softmax cross-entropy, backward, SGD momentum 0.9).
PyTorch and ONNX Runtime have one form of each: they answer to the *_eager names (and
torch_compile is torch.compile's). torchvision's ResNet-50 is "v1.5" (the stride on the
3x3 convolution, not the first 1x1): the same work within 1 %.
"""
import argparse
import json
import os
import tempfile

from timing import median_seconds

TORCHVISION = {"resnet50_v1": "resnet50", "mobilenetv2_1.0": "mobilenet_v2"}


def report(framework, network, bench, batch, seconds):
    print(json.dumps({"framework": framework, "network": network, "bench": bench, "batch": batch,
                      "seconds": round(seconds, 6), "samples_per_s": round(batch / seconds, 2)}),
          flush=True)


def mxnet_bench(args):
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon.model_zoo import vision
    mx.random.seed(0)
    net = vision.get_model(args.network, classes=1000)
    net.initialize(mx.init.Xavier())
    if "hybrid" in args.only:
        net.hybridize(static_alloc=True, static_shape=True)
    images = nd.random.uniform(-1, 1, shape=(args.batch, 3, 224, 224))
    labels = nd.random.randint(0, 1000, shape=(args.batch,)).astype("float32")
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})

    def predict():
        net(images).wait_to_read()

    def train():
        with autograd.record():
            loss = loss_fn(net(images), labels)
        loss.backward()
        trainer.step(args.batch)
        mx.nd.waitall()
    return train if args.only.startswith("train") else predict


def torch_bench(args, compiled):
    import torch
    import torchvision
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    net = getattr(torchvision.models, TORCHVISION[args.network])(num_classes=1000)
    images = torch.rand(args.batch, 3, 224, 224) * 2 - 1
    labels = torch.randint(0, 1000, (args.batch,))
    training = args.only.startswith("train")
    net.train(training)
    model = torch.compile(net) if compiled else net
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def predict():
        with torch.inference_mode():
            model(images)

    def train():
        optimizer.zero_grad()
        loss_fn(model(images), labels).backward()
        optimizer.step()
    return train if training else predict


def onnxruntime_bench(args):
    import numpy as np
    import onnxruntime
    import torch
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, TORCHVISION[args.network])(num_classes=1000).eval()
    x = np.random.RandomState(0).uniform(-1, 1, (args.batch, 3, 224, 224)).astype(np.float32)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "model.onnx")
        torch.onnx.export(net, torch.from_numpy(x), path, input_names=["data"], opset_version=17,
                          dynamo=False)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = args.threads
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, {"data": x})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", required=True,
                        choices=["mxnet", "torch", "torch_compile", "onnxruntime"])
    parser.add_argument("--network", required=True, choices=sorted(TORCHVISION))
    parser.add_argument("--only", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    if args.framework == "mxnet":
        work = mxnet_bench(args)
    elif args.framework == "onnxruntime":
        work = onnxruntime_bench(args)
    else:
        work = torch_bench(args, args.framework == "torch_compile")
    # torch.compile compiles in its first calls: two warm-ups.
    report(args.framework, args.network, args.only, args.batch,
           median_seconds(work, 2 if args.framework == "torch_compile" else 1, args.repeats))


if __name__ == "__main__":
    main()
