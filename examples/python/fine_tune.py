"""Fine-tuning a model-zoo network on an image folder, as MXNet's fine-tuning tutorial does:
the network with the weights MXNet saved for it (the model store's, or any .params file of
the same network), a new output layer for the folder's classes, then training the whole
network with a small learning rate, hybridized.

    python3 examples/python/fine_tune.py --data FOLDER [--network mobilenet0.25]
        [--params FILE.params | --pretrained] [--image-size 64] [--epochs 2]

FOLDER/train and FOLDER/test hold one folder of images per class (`dlc-train
--export-imagefolder FOLDER` writes Fashion-MNIST that way). --params names a file MXNet
saved for the network with --params-classes outputs (MXNet's save_parameters, or a
model-zoo file); --pretrained reads MXNet's published file from the model store
(~/.mxnet/models, see gluon.model_zoo.vision.pretrained_file); without either the
network starts from random weights.
"""
import argparse
import time

import dlc
from dlc import autograd, gluon, init, npx
from dlc.gluon import nn
from dlc.gluon.data.vision import ImageFolderDataset, transforms
from dlc.gluon.model_zoo import vision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--network", default="mobilenet0.25")
    parser.add_argument("--params", help="a .params file MXNet saved for the network")
    parser.add_argument("--params-classes", type=int, default=1000,
                        help="the output classes of --params (1000 for the model store's)")
    parser.add_argument("--pretrained", action="store_true")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    normalize = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train_set = ImageFolderDataset(args.data + "/train").transform_first(transforms.Compose([
        transforms.Resize(args.image_size * 8 // 7, keep_ratio=True),
        transforms.CenterCrop(args.image_size), transforms.RandomFlipLeftRight(),
        transforms.ToTensor(), normalize]))
    test_set = ImageFolderDataset(args.data + "/test").transform_first(transforms.Compose([
        transforms.Resize(args.image_size * 8 // 7, keep_ratio=True),
        transforms.CenterCrop(args.image_size), transforms.ToTensor(), normalize]))
    classes = len(set(label for _, label in (train_set[i] for i in range(len(train_set)))))

    # The network as MXNet saved it, then a new output layer for this folder's classes.
    if args.pretrained:
        net = vision.get_model(args.network, pretrained=True)
    else:
        net = vision.get_model(args.network, classes=args.params_classes)
        if args.params:
            net.load_parameters(args.params)
        else:
            net.initialize(init.Xavier())
    net.output = nn.Dense(classes) if not args.network.startswith("mobilenetv2") else \
        nn.HybridSequential().add(nn.Conv2D(classes, 1, use_bias=False), nn.Flatten())
    net.output.initialize(init.Xavier())
    net.hybridize()

    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    train_data = gluon.data.DataLoader(train_set, args.batch_size, shuffle=True, last_batch="discard")
    test_data = gluon.data.DataLoader(test_set, args.batch_size)
    print(f"fine-tuning {args.network} ({'MXNet weights' if args.params or args.pretrained else 'random start'}) "
          f"on {len(train_set)} images of {classes} classes, {args.image_size}x{args.image_size}")
    for epoch in range(1, args.epochs + 1):
        start, metric, total = time.time(), gluon.metric.Accuracy(), 0.0
        for data, label in train_data:
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(data.shape[0])
            metric.update([label], [output])
            total += float(loss.sum().asnumpy())
        test = gluon.metric.Accuracy()
        for data, label in test_data:
            test.update([label], [net(data)])
        print(f"[Epoch {epoch}] loss {total / len(train_set):.4f}, training accuracy "
              f"{metric.get()[1]:.3f}, test accuracy {test.get()[1]:.3f}, {time.time() - start:.1f} s")
    npx.waitall()


if __name__ == "__main__":
    main()
