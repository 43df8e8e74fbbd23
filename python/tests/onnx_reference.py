"""Writes the ONNX fixture of test_onnx.py with PyTorch (run it in bench/.venv):

    bench/.venv/bin/python python/tests/onnx_reference.py --out unittests/Onnx/Inputs/small

A small network of the layers exporters meet most (convolutions, a depthwise one, batch
normalization with running statistics, ReLU6, ceil-mode max pooling, a flatten through
shape arithmetic, dense layers, GELU, layer normalization), exported by torch.onnx at
opsets 13 and 17 with an open batch, and what PyTorch computes with it in eval mode:
the logits of a batch and the gradient of sum(logits * weights) for every parameter,
under the parameter's name, which the export keeps (no constant folding).
"""
import argparse
import pathlib

import torch
from safetensors.torch import save_file
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.hidden = nn.Linear(8 * 4 * 4, 16)
        self.norm = nn.LayerNorm(16)
        self.out = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.clamp(self.bn(self.conv(x)), 0, 6)
        x = self.pool(self.depthwise(x))
        x = x.view(x.size(0), -1)
        return self.out(self.norm(nn.functional.gelu(self.hidden(x))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(3)
    net = Small()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.2, 0.2)
    net.eval()
    x = torch.randn(3, 3, 15, 15)
    for opset in (13, 17):
        torch.onnx.export(net, (x,), str(out / f"opset{opset}.onnx"), input_names=["image"],
                          output_names=["logits"], opset_version=opset,
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                          do_constant_folding=False, dynamo=False)
    weights = torch.randn(3, 10)
    y = net(x)
    (y * weights).sum().backward()
    tensors = {"image": x, "logits": y.detach(), "weights": weights}
    for name, p in net.named_parameters():
        tensors["grad." + name] = p.grad
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / "reference.safetensors"))


if __name__ == "__main__":
    main()
