"""take and Embedding: numpy's take, the gradient of repeated ids, eager against
hybridized, MXNet 1.x's F.Embedding, errors, and MXNet 1.9.1's own Embedding with the same
table (when bench/.venv has it)."""
import numpy as onp
import pytest

from dlc import autograd, gluon, np, npx
from dlc.gluon import nn
from test_mxnet_parity import needs_mxnet, run_in_mxnet

RNG = onp.random.RandomState(12)
TABLE = RNG.uniform(-1, 1, (9, 4)).astype(onp.float32)
IDS = onp.array([[8, 0, 3], [3, 3, 1]], dtype=onp.int64)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_is_numpys(axis):
    x = RNG.uniform(-1, 1, (3, 4, 5)).astype(onp.float32)
    ids = onp.array([[2, -1], [0, 2]], dtype=onp.int32)
    onp.testing.assert_array_equal(np.take(np.array(x), np.array(ids), axis=axis).asnumpy(),
                                   onp.take(x, ids, axis=axis))


def test_embedding_gradient_adds_repeated_ids_eagerly_and_hybridized():
    weights = RNG.uniform(-1, 1, IDS.shape + (4,)).astype(onp.float32)
    want_grad = onp.zeros_like(TABLE)
    onp.add.at(want_grad, IDS, weights)
    for hybridize in (False, True):
        layer = nn.Embedding(9, 4)
        layer.initialize()
        layer.weight.set_data(np.array(TABLE))
        layer.hybridize(hybridize)
        with autograd.record():
            y = layer(np.array(IDS.astype(onp.float32)))  # MXNet 1.x feeds float ids
            loss = (y * np.array(weights)).sum()
        loss.backward()
        onp.testing.assert_array_equal(y.asnumpy(), TABLE[IDS])
        onp.testing.assert_allclose(layer.weight.grad().asnumpy(), want_grad, rtol=1e-6,
                                    atol=1e-6)


def test_mxnet1_embedding_and_errors():
    class Legacy(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.table = self.params.get("table", shape=(9, 4))

        def hybrid_forward(self, F, x, table):
            return F.Embedding(x, table, input_dim=9, output_dim=4) + F.take(table, x)

    block = Legacy()
    block.initialize()
    block.table.set_data(np.array(TABLE))
    onp.testing.assert_allclose(block(np.array(IDS)).asnumpy(), 2 * TABLE[IDS], rtol=1e-6)
    with pytest.raises(IndexError, match=r"index 9 \(element 1 of the indices\) is outside"):
        npx.embedding(np.array(onp.array([0, 9])), np.array(TABLE)).asnumpy()
    with pytest.raises(ValueError, match="is not \\(input_dim, output_dim\\)"):
        npx.embedding(np.array(IDS), np.array(TABLE), input_dim=8, output_dim=4)
    with pytest.raises(NotImplementedError, match="sparse_grad"):
        nn.Embedding(9, 4, sparse_grad=True)
    with pytest.raises(NotImplementedError, match="mode 'clip'"):
        np.take(np.array(TABLE), np.array(IDS), axis=0, mode="clip")


MXNET_SCRIPT = """
import sys
import mxnet as mx, numpy as onp
from mxnet.gluon import nn
args = onp.load(sys.argv[1])
layer = nn.Embedding(9, 4)
layer.initialize()
layer.weight.set_data(mx.nd.array(args["table"]))
ids = mx.nd.array(args["ids"])
with mx.autograd.record():
    y = layer(ids)
    loss = (y * mx.nd.array(args["weights"])).sum()
loss.backward()
onp.savez(sys.argv[2], y=y.asnumpy(), grad=layer.weight.grad().asnumpy())
"""


@needs_mxnet
def test_embedding_agrees_with_mxnet(tmp_path):
    weights = RNG.uniform(-1, 1, IDS.shape + (4,)).astype(onp.float32)
    onp.savez(tmp_path / "in.npz", table=TABLE, ids=IDS.astype(onp.float32), weights=weights)
    run_in_mxnet(MXNET_SCRIPT, tmp_path / "in.npz", tmp_path / "out.npz")
    want = onp.load(tmp_path / "out.npz")
    layer = nn.Embedding(9, 4)
    layer.initialize()
    layer.weight.set_data(np.array(TABLE))
    layer.hybridize()
    with autograd.record():
        y = layer(np.array(IDS))
        loss = (y * np.array(weights)).sum()
    loss.backward()
    onp.testing.assert_array_equal(y.asnumpy(), want["y"])
    onp.testing.assert_allclose(layer.weight.grad().asnumpy(), want["grad"], rtol=1e-6, atol=1e-6)
