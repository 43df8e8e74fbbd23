"""Fused attention (npx.scaled_dot_product_attention), masked softmax and layer norm:
numpy's formulas, gradients against the unfused ops, a hybridized block, errors, and
PyTorch's scaled_dot_product_attention with the same inputs (when bench/.venv has it)."""
import subprocess

import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from test_mxnet_parity import VENV_PYTHON

RNG = onp.random.RandomState(41)
Q = RNG.uniform(-2, 2, (2, 3, 6, 8)).astype(onp.float32)
K = RNG.uniform(-2, 2, (2, 3, 9, 8)).astype(onp.float32)
V = RNG.uniform(-1, 1, (2, 3, 9, 5)).astype(onp.float32)
PAD = onp.ones((2, 1, 1, 9), dtype=bool)
PAD[0, ..., 6:] = False


def numpy_attention(q, k, v, mask=None, causal=False, scale=None):
    scale = 1 / onp.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ onp.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = onp.where(mask, s, -onp.inf) if mask.dtype == bool else s + mask
    if causal:
        s = onp.where(onp.tril(onp.ones(s.shape[-2:], dtype=bool)), s, -onp.inf)
    w = onp.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("mask,causal", [(None, False), (PAD, False), (None, True),
                                         (RNG.uniform(-1, 1, (6, 9)).astype(onp.float32), True)])
def test_attention_is_the_formula(mask, causal):
    got = npx.scaled_dot_product_attention(np.array(Q), np.array(K), np.array(V),
                                           mask=None if mask is None else np.array(mask),
                                           causal=causal)
    onp.testing.assert_allclose(got.asnumpy(), numpy_attention(Q, K, V, mask, causal),
                                rtol=1e-5, atol=1e-6)


class SelfAttention(gluon.HybridBlock):
    """Attention of a computed value, sliced into query, key and value, then layer norm."""

    def forward(self, x):
        y = x * 1.5
        o = npx.scaled_dot_product_attention(y[..., :8], y[..., 8:16], y[..., 16:], causal=True)
        return npx.layer_norm(o, axis=-1)


@pytest.mark.parametrize("hybridize", [False, True])
def test_gradients_match_the_unfused_ops(hybridize):
    x_np = RNG.uniform(-1, 1, (2, 7, 21)).astype(onp.float32)
    block = SelfAttention()
    block.hybridize(hybridize)
    x = np.array(x_np)
    x.attach_grad()
    with autograd.record():
        block(x).sum().backward()
    # The same chain with matmul, a causal where and softmax.
    ref = np.array(x_np)
    ref.attach_grad()
    with autograd.record():
        y = ref * 1.5
        s = np.matmul(y[..., :8], np.transpose(y[..., 8:16], (0, 2, 1))) / onp.sqrt(8)
        causal = np.array(onp.tril(onp.ones((7, 7), dtype=bool)))
        w = npx.masked_softmax(s, causal, axis=-1)
        npx.layer_norm(np.matmul(w, y[..., 16:]), axis=-1).sum().backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), ref.grad.asnumpy(), rtol=1e-4, atol=1e-5)


def test_masked_softmax_is_mxnets():
    x = RNG.uniform(-3, 3, (3, 5)).astype(onp.float32)
    keep = RNG.uniform(0, 1, (3, 5)) > 0.4
    keep[1] = False
    want = onp.where(keep, onp.exp(x / 2), 0)
    want = want / onp.maximum(want.sum(-1, keepdims=True), 1e-30)
    onp.testing.assert_allclose(
        npx.masked_softmax(np.array(x), np.array(keep), temperature=2.0).asnumpy(), want,
        rtol=1e-5, atol=1e-7)
    log = npx.masked_log_softmax(np.array(x), np.array(keep)).asnumpy()
    assert onp.all(onp.isneginf(log[~keep]))
    with pytest.raises(TypeError, match="the mask must be boolean"):
        npx.masked_softmax(np.array(x), np.array(x))


def test_attention_errors_name_the_problem():
    q = np.array(Q)
    with pytest.raises(ValueError, match="must have the query's 8 features"):
        npx.scaled_dot_product_attention(q, np.array(K[..., :7]), np.array(V))
    with pytest.raises(ValueError, match="does not broadcast to the scores"):
        npx.scaled_dot_product_attention(q, np.array(K), np.array(V), mask=np.array(PAD[..., :8]))
    with pytest.raises(ValueError, match="dropout must be in"):
        npx.scaled_dot_product_attention(q, np.array(K), np.array(V), dropout=1.0)


TORCH_SCRIPT = """
import sys
import numpy as onp, torch
args = onp.load(sys.argv[1])
q, k, v = (torch.tensor(args[n], requires_grad=True) for n in "qkv")
mask = torch.tensor(args["mask"])
out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
(out * torch.tensor(args["w"])).sum().backward()
onp.savez(sys.argv[2], out=out.detach().numpy(), dq=q.grad.numpy(), dk=k.grad.numpy(),
          dv=v.grad.numpy())
"""


def torch_available():
    if not VENV_PYTHON.exists():
        return False
    return subprocess.run([str(VENV_PYTHON), "-c", "import torch"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not torch_available(), reason="PyTorch is not in bench/.venv "
                                                  "(bench/setup-peers.sh)")
def test_attention_agrees_with_pytorch(tmp_path):
    w = RNG.uniform(-1, 1, (2, 3, 6, 5)).astype(onp.float32)
    onp.savez(tmp_path / "in.npz", q=Q, k=K, v=V, mask=PAD, w=w)
    result = subprocess.run([str(VENV_PYTHON), "-c", TORCH_SCRIPT, str(tmp_path / "in.npz"),
                             str(tmp_path / "out.npz")], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    want = onp.load(tmp_path / "out.npz")
    q, k, v = np.array(Q), np.array(K), np.array(V)
    for t in (q, k, v):
        t.attach_grad()
    with autograd.record():
        out = npx.scaled_dot_product_attention(q, k, v, mask=np.array(PAD), scale=0.3)
        (out * np.array(w)).sum().backward()
    onp.testing.assert_allclose(out.asnumpy(), want["out"], rtol=1e-5, atol=1e-6)
    for name, t in (("dq", q), ("dk", k), ("dv", v)):
        onp.testing.assert_allclose(t.grad.asnumpy(), want[name], rtol=1e-4, atol=1e-5)
