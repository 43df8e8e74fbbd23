"""nn.MultiHeadAttention, nn.TransformerEncoderLayer and nn.TransformerDecoderLayer: PyTorch's
nn.TransformerEncoderLayer with the same weights (post-norm with a padding mask; pre-norm
and causal) and nn.TransformerDecoderLayer (a padded memory, both norm placements),
outputs and input gradients (when bench/.venv has PyTorch); hybridized as eager; errors."""
import subprocess

import numpy as onp
import pytest

from dlc import autograd, np
from dlc.gluon import nn
from test_attention import torch_available
from test_mxnet_parity import VENV_PYTHON

RNG = onp.random.RandomState(51)

TORCH_SCRIPT = """
import sys
import numpy as onp, torch
args = onp.load(sys.argv[1])
norm_first = bool(args["norm_first"])
torch.manual_seed(3)
layer = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=24, dropout=0.0,
                                         activation="gelu", layer_norm_eps=1e-5,
                                         batch_first=True, norm_first=norm_first)
x = torch.tensor(args["x"], requires_grad=True)
if norm_first:
    mask = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1])
    y = layer(x, src_mask=mask, is_causal=True)
else:
    y = layer(x, src_key_padding_mask=torch.tensor(args["padding"]))
(y * torch.tensor(args["w"])).sum().backward()
weights = {name: p.detach().numpy() for name, p in layer.named_parameters()}
onp.savez(sys.argv[2], y=y.detach().numpy(), dx=x.grad.numpy(), **weights)
"""


def dlc_layer(weights, norm_first):
    layer = nn.TransformerEncoderLayer(16, 24, 4, pre_norm=norm_first, causal=norm_first,
                                       layer_norm_eps=1e-5, fused_qkv=True)
    layer.initialize()
    names = {"attention.qkv_proj.weight": "self_attn.in_proj_weight",
             "attention.qkv_proj.bias": "self_attn.in_proj_bias",
             "attention.out_proj.weight": "self_attn.out_proj.weight",
             "attention.out_proj.bias": "self_attn.out_proj.bias",
             "ffn_hidden.weight": "linear1.weight", "ffn_hidden.bias": "linear1.bias",
             "ffn_out.weight": "linear2.weight", "ffn_out.bias": "linear2.bias",
             "attention_norm.gamma": "norm1.weight", "attention_norm.beta": "norm1.bias",
             "ffn_norm.gamma": "norm2.weight", "ffn_norm.beta": "norm2.bias"}
    params = layer.collect_params()
    for ours, theirs in names.items():
        params[ours].set_data(np.array(weights[theirs]))
    return layer


@pytest.mark.skipif(not torch_available(), reason="PyTorch is not in bench/.venv "
                                                  "(bench/setup-peers.sh)")
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("hybridize", [False, True])
def test_layer_agrees_with_pytorch(tmp_path, norm_first, hybridize):
    x = RNG.uniform(-1, 1, (2, 7, 16)).astype(onp.float32)
    w = RNG.uniform(-1, 1, (2, 7, 16)).astype(onp.float32)
    padding = onp.zeros((2, 7), dtype=bool)
    padding[0, 5:] = True  # PyTorch: True is ignored
    onp.savez(tmp_path / "in.npz", x=x, w=w, padding=padding, norm_first=norm_first)
    result = subprocess.run([str(VENV_PYTHON), "-c", TORCH_SCRIPT, str(tmp_path / "in.npz"),
                             str(tmp_path / "out.npz")], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    want = onp.load(tmp_path / "out.npz")
    layer = dlc_layer(want, norm_first)
    layer.hybridize(hybridize)
    xs = np.array(x)
    xs.attach_grad()
    with autograd.record():
        if norm_first:
            y = layer(xs)
        else:
            keep = np.array(~padding[:, None, None, :])
            y = layer(xs, keep)
        (y * np.array(w)).sum().backward()
    onp.testing.assert_allclose(y.asnumpy(), want["y"], rtol=1e-4, atol=1e-5)
    onp.testing.assert_allclose(xs.grad.asnumpy(), want["dx"], rtol=1e-4, atol=1e-5)


def test_attention_block_shapes_and_errors():
    attention = nn.MultiHeadAttention(8, 2)
    attention.initialize()
    query = np.array(RNG.uniform(-1, 1, (2, 3, 8)).astype(onp.float32))
    memory = np.array(RNG.uniform(-1, 1, (2, 5, 8)).astype(onp.float32))
    keep = np.array(onp.ones((2, 1, 1, 5), dtype=bool))
    assert attention(query, memory, keep).shape == (2, 3, 8)
    assert attention.query_proj.weight.shape == (8, 8)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        nn.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="must be \\(batch, length, units\\)"):
        attention(np.array(onp.ones((2, 8), dtype=onp.float32)))


DECODER_SCRIPT = """
import sys
import numpy as onp, torch
args = onp.load(sys.argv[1])
torch.manual_seed(4)
layer = torch.nn.TransformerDecoderLayer(16, 4, dim_feedforward=24, dropout=0.0,
                                         activation="gelu", layer_norm_eps=1e-5,
                                         batch_first=True, norm_first=bool(args["norm_first"]))
x = torch.tensor(args["x"], requires_grad=True)
memory = torch.tensor(args["memory"], requires_grad=True)
causal = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1])
y = layer(x, memory, tgt_mask=causal, tgt_is_causal=True,
          memory_key_padding_mask=torch.tensor(args["padding"]))
(y * torch.tensor(args["w"])).sum().backward()
weights = {name: p.detach().numpy() for name, p in layer.named_parameters()}
onp.savez(sys.argv[2], y=y.detach().numpy(), dx=x.grad.numpy(), dmemory=memory.grad.numpy(),
          **weights)
"""


def dlc_decoder(weights, norm_first):
    layer = nn.TransformerDecoderLayer(16, 24, 4, pre_norm=norm_first, layer_norm_eps=1e-5)
    layer.initialize()
    params = layer.collect_params()
    # PyTorch packs each attention's query, key and value weights in one in_proj_weight.
    for ours, theirs in (("self_attention", "self_attn"), ("cross_attention", "multihead_attn")):
        w, b = weights[theirs + ".in_proj_weight"], weights[theirs + ".in_proj_bias"]
        for i, part in enumerate(("query_proj", "key_proj", "value_proj")):
            params[f"{ours}.{part}.weight"].set_data(np.array(w[16 * i:16 * (i + 1)]))
            params[f"{ours}.{part}.bias"].set_data(np.array(b[16 * i:16 * (i + 1)]))
        params[f"{ours}.out_proj.weight"].set_data(np.array(weights[theirs + ".out_proj.weight"]))
        params[f"{ours}.out_proj.bias"].set_data(np.array(weights[theirs + ".out_proj.bias"]))
    for ours, theirs in (("ffn_hidden", "linear1"), ("ffn_out", "linear2")):
        params[ours + ".weight"].set_data(np.array(weights[theirs + ".weight"]))
        params[ours + ".bias"].set_data(np.array(weights[theirs + ".bias"]))
    for ours, theirs in (("self_attention_norm", "norm1"), ("cross_attention_norm", "norm2"),
                         ("ffn_norm", "norm3")):
        params[ours + ".gamma"].set_data(np.array(weights[theirs + ".weight"]))
        params[ours + ".beta"].set_data(np.array(weights[theirs + ".bias"]))
    return layer


@pytest.mark.skipif(not torch_available(), reason="PyTorch is not in bench/.venv "
                                                  "(bench/setup-peers.sh)")
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_agrees_with_pytorch(tmp_path, norm_first):
    x = RNG.uniform(-1, 1, (2, 5, 16)).astype(onp.float32)
    memory = RNG.uniform(-1, 1, (2, 7, 16)).astype(onp.float32)
    w = RNG.uniform(-1, 1, (2, 5, 16)).astype(onp.float32)
    padding = onp.zeros((2, 7), dtype=bool)
    padding[1, 4:] = True
    onp.savez(tmp_path / "in.npz", x=x, memory=memory, w=w, padding=padding,
              norm_first=norm_first)
    result = subprocess.run([str(VENV_PYTHON), "-c", DECODER_SCRIPT, str(tmp_path / "in.npz"),
                             str(tmp_path / "out.npz")], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    want = onp.load(tmp_path / "out.npz")
    layer = dlc_decoder(want, norm_first)
    layer.hybridize()
    xs, ms = np.array(x), np.array(memory)
    xs.attach_grad()
    ms.attach_grad()
    with autograd.record():
        y = layer(xs, ms, np.array(~padding[:, None, None, :]))
        (y * np.array(w)).sum().backward()
    onp.testing.assert_allclose(y.asnumpy(), want["y"], rtol=1e-4, atol=1e-5)
    onp.testing.assert_allclose(xs.grad.asnumpy(), want["dx"], rtol=1e-4, atol=1e-5)
    onp.testing.assert_allclose(ms.grad.asnumpy(), want["dmemory"], rtol=1e-4, atol=1e-5)
