"""MXNet 1.9.1's resnet50_v1 (its model zoo, random weights), timed as
bench/resnet50.cpp times dlc: median of repeats after a warm-up, one JSON line each.

    bench/.venv/bin/python bench/peers/resnet50.py [--threads N] [--only BENCH]
        [--batches B ...] [--repeats N]

Benches: resnet50_infer_eager / _hybrid (prediction; hybridize(static_alloc,
static_shape)), resnet50_train_eager / _hybrid (record, softmax cross-entropy, backward,
SGD with momentum 0.9).
"""
import argparse
import json
import os

from timing import median_seconds


def report(bench, batch, seconds):
    print(json.dumps({"framework": "mxnet", "bench": bench, "batch": batch,
                      "seconds": round(seconds, 6),
                      "samples_per_s": round(batch / seconds, 2)}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--only", default="")
    parser.add_argument("--batches", type=int, nargs="*", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon.model_zoo import vision

    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for bench in ("resnet50_infer_eager", "resnet50_infer_hybrid",
                  "resnet50_train_eager", "resnet50_train_hybrid"):
        if args.only and args.only != bench:
            continue
        training = "train" in bench
        for batch in args.batches or ([8, 32] if training else [1, 32]):
            mx.random.seed(0)
            net = vision.resnet50_v1(classes=1000)
            net.initialize(mx.init.Xavier())
            if "hybrid" in bench:
                net.hybridize(static_alloc=True, static_shape=True)
            images = nd.random.uniform(-1, 1, shape=(batch, 3, 224, 224))
            labels = nd.random.randint(0, 1000, shape=(batch,)).astype("float32")
            trainer = gluon.Trainer(net.collect_params(), "sgd",
                                    {"learning_rate": 0.01, "momentum": 0.9})

            def predict():
                net(images).wait_to_read()

            def train():
                with autograd.record():
                    loss = loss_fn(net(images), labels)
                loss.backward()
                trainer.step(batch)
                mx.nd.waitall()
            report(bench, batch, median_seconds(train if training else predict, 1, args.repeats))


if __name__ == "__main__":
    main()
