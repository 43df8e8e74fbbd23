"""gluon: blocks written in Python (eager and hybridized), layers, parameters and their
files (including MXNet's), Trainer, losses, metrics, split_and_load, compiled models."""
import numpy as onp
import pytest

import dlc
from dlc import autograd, gluon, np, npx
from dlc.gluon import nn

from conftest import MXNET_FIXTURES


class Net(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        self.features = nn.HybridSequential()
        self.features.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.MaxPool2D(2),
                          nn.BatchNorm())
        self.out = nn.Dense(3)
        self.scale = gluon.Parameter("scale", shape=(3,), init=dlc.init.Constant(2.0))

    def forward(self, x):
        return self.out(self.features(x)) * self.scale.data(x.device)


def inputs(n=4):
    return np.random.uniform(-1, 1, size=(n, 1, 6, 6))


def test_python_blocks_register_children_and_parameters_by_attribute():
    net = Net()
    net.initialize(dlc.init.Xavier())
    net(inputs())  # deferred shapes
    assert list(net.collect_params().keys()) == [
        "scale", "features.0.weight", "features.0.bias", "features.2.gamma", "features.2.beta",
        "features.2.running_mean", "features.2.running_var", "out.weight", "out.bias"]
    assert list(net.collect_params(".*weight").keys()) == ["features.0.weight", "out.weight"]
    assert net.collect_params()["features.0.weight"].shape == (4, 1, 3, 3)
    assert net.out.weight.shape == (3, 36)
    assert net.scale.data().asnumpy().tolist() == [2.0, 2.0, 2.0]
    assert "Net(" in repr(net) and "(features): HybridSequential(" in repr(net)
    assert isinstance(net.features[0], nn.Conv2D)


def test_hybridize_traces_python_forward_and_matches_eager():
    net = Net()
    net.initialize(dlc.init.Xavier())
    x = inputs()
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    eager_grads = {k: p.grad().asnumpy() for k, p in net.collect_params().items()
                   if p.grad_req != "null"}
    eager = net(x)  # predicting, with the running statistics that training updated
    net.hybridize()
    onp.testing.assert_allclose(net(x).asnumpy(), eager.asnumpy(), rtol=1e-5, atol=1e-6)
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    for name, grad in eager_grads.items():
        onp.testing.assert_allclose(net.collect_params()[name].grad().asnumpy(), grad,
                                    rtol=1e-4, atol=1e-5, err_msg=name)
    stats = net.compile_stats()
    assert stats["compiles"] == 2 and stats["calls"] == 2  # predicting and training
    assert "dlc.conv2d" in net.traced_ir()
    net(x)
    assert net.compile_stats()["cache_hits"] == 1


def test_hybridize_keyword_arguments_are_compile_options():
    net = Net()
    net.initialize(dlc.init.Xavier())
    x = inputs()
    net(x)
    net.hybridize(fuse=False, generated_kernels=False, blocked_layout="plain",
                  prepare_parameters=False, pool_indices=False, norm_activation=False,
                  group_updates=False, memory_budget="1.5M", conv_algorithms="direct",
                  static_alloc=True, static_shape=True)  # MXNet's flags are accepted
    options = net.compile_options
    assert options["fuse"] is False and options["generated_kernels"] is False
    assert options["prepare_parameters"] is False and options["pool_indices"] is False
    assert options["norm_activation"] is False and options["group_updates"] is False
    assert options["memory_budget"] == 3 * 2**19
    assert options["conv_algorithms"] == "direct"
    assert options["blocked_layout"] == "plain"
    assert net.features.compile_options["fuse"] is False  # children compile alike
    unfused = net(x).asnumpy()
    assert 'dlc.fused "' not in net.compiled_ir()
    net.hybridize()  # the environment's options: fusion on
    assert net.compile_options["fuse"] is True
    onp.testing.assert_allclose(net(x).asnumpy(), unfused, rtol=1e-5, atol=1e-6)
    assert 'dlc.fused "' in net.compiled_ir()
    with pytest.raises(TypeError, match="unexpected keyword argument 'fusion'.*fuse"):
        net.hybridize(fusion=False)
    with pytest.raises(ValueError, match="conv_algorithms='fastest': expected auto, timed, winograd"):
        net.hybridize(conv_algorithms="fastest")
    with pytest.raises(ValueError, match="memory_budget='lots': expected a number of bytes"):
        net.hybridize(memory_budget="lots")
    with pytest.raises(ValueError, match="blocked_layout='NCHW'"):
        net.hybridize(blocked_layout="NCHW")


def test_reading_values_while_tracing_is_an_error_naming_the_read():
    class Peeking(gluon.HybridBlock):
        def forward(self, x):
            if float(x.sum()) > 0:  # a value-dependent branch cannot be compiled
                return x
            return -x

    block = Peeking()
    assert block(np.ones(3)).asnumpy().tolist() == [1, 1, 1]  # eagerly it runs
    block.hybridize()
    with pytest.raises(dlc.DLCError, match="item|read|trac"):
        block(np.ones(3))


def test_hybridized_blocks_take_several_arrays_and_return_several():
    class Pair(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, in_units=2)

        def forward(self, a, b):
            h = self.dense(a)
            return h + b.sum(), [a * b]  # a tuple; a list inside is not an array

    class Both(gluon.HybridBlock):
        def __init__(self, as_list):
            super().__init__()
            self.dense = nn.Dense(3, in_units=2)
            self.as_list = as_list

        def forward(self, a, b):
            h = self.dense(a)
            out = [h * b.sum(), a * b + h.sum()]
            return out if self.as_list else tuple(out)

    a = np.array([[1.0, -2.0], [0.5, 3.0]])
    b = np.array([[2.0, 1.0], [-1.0, 4.0]])
    for as_list in (False, True):
        net = Both(as_list)
        net.initialize()
        eager = net(a, b)
        a.attach_grad()
        with autograd.record():
            first, second = net(a, b)
            loss = (first * first).sum() + second.sum()
        loss.backward()
        eager_grads = [a.grad.asnumpy().copy(), net.dense.weight.grad().asnumpy().copy()]
        net.hybridize()
        compiled = net(a, b)
        assert isinstance(compiled, list if as_list else tuple) and len(compiled) == 2
        for e, c in zip(eager, compiled):
            onp.testing.assert_allclose(c.asnumpy(), e.asnumpy(), rtol=1e-5)
        with autograd.record():
            first, second = net(a, b)
            loss = (first * first).sum() + second.sum()
        loss.backward()
        onp.testing.assert_allclose(a.grad.asnumpy(), eager_grads[0], rtol=1e-5)
        onp.testing.assert_allclose(net.dense.weight.grad().asnumpy(), eager_grads[1], rtol=1e-5)
        assert net.compile_stats()["compiles"] == 2  # predicting, then training

    pair = Pair()
    pair.initialize()
    pair(a, b)  # eagerly, forward returns what it returns
    pair.hybridize()
    with pytest.raises(NotImplementedError, match=r"returned a tuple of 2 \(ndarray, list\)"):
        pair(a, b)
    with pytest.raises(NotImplementedError, match="argument #1 is a float"):
        pair(a, 2.0)

    class Plain(gluon.Block):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(2, in_units=3)

        def forward(self, x):
            return self.dense(x)

    plain = Plain()
    plain.initialize()
    assert plain(np.ones((1, 3))).shape == (1, 2)


def test_initialize_devices_reset_device_and_cast():
    net = Net()
    net.initialize(dlc.init.Xavier(), device=[npx.cpu(0), npx.cpu(1)])
    net(inputs().copyto(npx.cpu(1)))
    weight = net.out.weight
    assert weight.list_device() == [npx.cpu(0), npx.cpu(1)]
    onp.testing.assert_array_equal(weight.data(npx.cpu(0)).asnumpy(),
                                   weight.data(npx.cpu(1)).asnumpy())
    net.collect_params().reset_device(npx.cpu(2))
    assert weight.list_device() == [npx.cpu(2)]
    assert net(inputs().copyto(npx.cpu(2))).device == npx.cpu(2)
    with pytest.raises(dlc.DLCError, match="cpu\\(0\\)"):
        weight.data(npx.cpu(0))
    net.initialize(dlc.init.Zero(), device=npx.cpu(2), force_reinit=True)
    assert float(abs(weight.data()).sum()) == 0.0
    dense = nn.Dense(2, in_units=3)
    dense.initialize()
    dense.cast("float16")
    assert dense.weight.dtype == onp.float16


def test_save_and_load_parameters(tmp_path):
    net = Net()
    net.initialize(dlc.init.Xavier())
    x = inputs()
    expected = net(x).asnumpy()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    other = Net()
    other.load_parameters(path, device=npx.cpu(1))
    onp.testing.assert_allclose(other(x.copyto(npx.cpu(1))).asnumpy(), expected, rtol=1e-6)
    arrays = npx.load(path)
    assert sorted(arrays) == sorted(net.collect_params().keys())
    # A file without some parameters, or with extra ones.
    npx.save(str(tmp_path / "part.params"), {"out.weight": arrays["out.weight"],
                                             "extra": np.ones(1)})
    with pytest.raises(dlc.DLCError, match="extra"):
        Net().load_parameters(str(tmp_path / "part.params"), allow_missing=True)
    partial = Net()
    partial.initialize()
    partial(x)
    partial.load_parameters(str(tmp_path / "part.params"), allow_missing=True, ignore_extra=True)
    onp.testing.assert_array_equal(partial.out.weight.data().asnumpy(),
                                   arrays["out.weight"].asnumpy())
    with pytest.raises(dlc.DLCError, match="missing|features"):
        Net().load_parameters(str(tmp_path / "part.params"), ignore_extra=True)
    with pytest.raises(dlc.DLCError, match="nothing-here"):
        Net().load_parameters(str(tmp_path / "nothing-here.params"))
    (tmp_path / "garbage.params").write_bytes(b"\x00" * 5)
    with pytest.raises(dlc.DLCError, match="garbage"):
        Net().load_parameters(str(tmp_path / "garbage.params"))


def tiny_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    return net


@pytest.mark.parametrize("hybridize", [False, True])
def test_parameters_saved_by_mxnet_load_and_predict_as_mxnet_did(hybridize):
    io = npx.load(str(MXNET_FIXTURES / "tiny_net_io.params"))
    net = tiny_net()
    net.load_parameters(str(MXNET_FIXTURES / "tiny_net.params"), device=npx.cpu(1))
    if hybridize:
        net.hybridize()
    out = net(io["input"].copyto(npx.cpu(1)))
    onp.testing.assert_allclose(out.asnumpy(), io["output"].asnumpy(), rtol=1e-5, atol=1e-5)
    shapes = npx.load(str(MXNET_FIXTURES / "np_shapes.params"))
    assert shapes["scalar"].shape == () and shapes["scalar"].item() == 4.5


def test_export_and_compiled_model(tmp_path):
    net = Net()
    net.initialize(dlc.init.Xavier())
    x = inputs(2)
    with pytest.raises(dlc.DLCError):
        net.export(str(tmp_path / "net"))  # nothing traced yet
    net.hybridize()
    expected = net(x).asnumpy()
    mlir, weights = net.export(str(tmp_path / "net"))
    assert "dlc." in open(mlir).read() and sorted(npx.load(weights)) == sorted(
        net.collect_params().keys())
    net.save_compiled(str(tmp_path / "net.dlc"))
    model = dlc.CompiledModel(str(tmp_path / "net.dlc"))
    assert model.inputs[0]["shape"] == (2, 1, 6, 6) and model.target == "cpu"
    onp.testing.assert_allclose(model(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(dlc.DLCError, match="'data' must be float32 2x1x6x6, got 3x1x6x6"):
        model(np.ones((3, 1, 6, 6)))
    (tmp_path / "bad.dlc").write_bytes(b"DLCMODEL" + b"\x01" * 40)
    with pytest.raises(dlc.DLCError, match="bad.dlc"):
        dlc.CompiledModel(str(tmp_path / "bad.dlc"))


def test_trainer_sgd_step_and_stale_gradients():
    dense = nn.Dense(2, in_units=3, use_bias=False)
    dense.initialize(dlc.init.Constant(0.5))
    trainer = gluon.Trainer(dense.collect_params(), "sgd", {"learning_rate": 0.1})
    x = np.array([[1.0, 2.0, 3.0]])
    with autograd.record():
        y = dense(x).sum()
    y.backward()
    grad = dense.weight.grad().asnumpy()
    assert grad.tolist() == [[1, 2, 3], [1, 2, 3]]
    trainer.step(2)
    onp.testing.assert_allclose(dense.weight.data().asnumpy(), 0.5 - 0.1 * grad / 2, rtol=1e-6)
    with pytest.raises(dlc.DLCError, match="weight"):
        trainer.step(2)  # no backward since: the stale gradient is refused, as in MXNet
    trainer.step(2, ignore_stale_grad=True)
    trainer.set_learning_rate(0.5)
    assert trainer.learning_rate == 0.5
    with pytest.raises(ValueError):
        gluon.Trainer(dense.collect_params(), "rmsprop-ish")


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_trainer_states_resume_the_optimizer(tmp_path, optimizer):
    """trainer.save_states / load_states (MXNet's names): a trainer that loads another's
    states and parameters goes on exactly as the other does."""
    options = {"learning_rate": 0.1, **({"momentum": 0.9} if optimizer == "sgd" else {})}
    x = np.array([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]])

    def make():
        dense = nn.Dense(2, in_units=3)
        dense.initialize(dlc.init.Constant(0.5))
        return dense, gluon.Trainer(dense.collect_params(), optimizer, options)

    def train(dense, trainer, steps):
        for k in range(steps):
            with autograd.record():
                y = (dense(x) * (k + 1)).sum()
            y.backward()
            trainer.step(2)

    first, trainer = make()
    train(first, trainer, 3)
    trainer.save_states(str(tmp_path / "t.states"))
    first.save_parameters(str(tmp_path / "t.safetensors"))
    train(first, trainer, 2)

    second, resumed = make()
    second.load_parameters(str(tmp_path / "t.safetensors"))
    resumed.load_states(str(tmp_path / "t.states"))
    train(second, resumed, 2)
    assert second.weight.data().asnumpy().tolist() == first.weight.data().asnumpy().tolist()
    other = gluon.Trainer(second.collect_params(), "nag" if optimizer == "adam" else "adam")
    with pytest.raises(ValueError, match=f"the states are {optimizer}'s"):
        other.load_states(str(tmp_path / "t.states"))


def test_losses_and_accuracy():
    pred_np = onp.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]], dtype=onp.float32)
    label_np = onp.array([0, 2])
    loss = gluon.loss.SoftmaxCrossEntropyLoss()(np.array(pred_np), np.array(label_np))
    log_p = pred_np - onp.log(onp.exp(pred_np).sum(1, keepdims=True))
    onp.testing.assert_allclose(loss.asnumpy(), -log_p[[0, 1], label_np], rtol=1e-5)
    l2 = gluon.loss.L2Loss()(np.array(pred_np), np.zeros((2, 3)))
    onp.testing.assert_allclose(l2.asnumpy(), 0.5 * (pred_np ** 2).mean(1), rtol=1e-5)
    weighted = gluon.loss.L2Loss(weight=2.0)(np.array(pred_np), np.zeros((2, 3)))
    onp.testing.assert_allclose(weighted.asnumpy(), (pred_np ** 2).mean(1), rtol=1e-5)
    acc = gluon.metric.Accuracy()
    acc.update(np.array(label_np), np.array(pred_np))
    assert acc.get() == ("accuracy", 0.5)
    acc.update([np.array([1])], [np.array([[0.0, 1.0, 0.0]])])
    assert acc.get()[1] == pytest.approx(2 / 3) and acc.num_inst == 3
    acc.reset()
    assert onp.isnan(acc.get()[1])


def test_split_and_load_as_mxnet():
    devices = [npx.cpu(0), npx.cpu(1)]
    parts = gluon.utils.split_and_load(onp.arange(8, dtype=onp.float32).reshape(4, 2), devices)
    assert [p.device for p in parts] == devices and [p.shape for p in parts] == [(2, 2)] * 2
    parts = gluon.utils.split_and_load(np.arange(5), devices, even_split=False)
    assert [p.asnumpy().tolist() for p in parts] == [[0, 1, 2], [3, 4]]  # MXNet's sizes
    with pytest.raises(ValueError, match="cannot be evenly split into 2 slices"):
        gluon.utils.split_and_load(np.ones((5, 3)), devices)
    with pytest.raises(ValueError, match="Too many slices"):
        gluon.utils.split_and_load(np.ones((1, 3)), devices, even_split=False)
    one = gluon.utils.split_and_load(np.ones((3, 2)), [npx.cpu(1)])
    assert len(one) == 1 and one[0].device == npx.cpu(1)
    cols = gluon.utils.split_and_load(np.ones((2, 6)), devices, batch_axis=1)
    assert [c.shape for c in cols] == [(2, 3), (2, 3)]


def test_sequential_subclasses_may_override_forward_hybridized_too():
    class Doubling(nn.HybridSequential):
        def forward(self, x):
            for child in self[0], self[1]:
                x = child(x)
            return x * 2

    net = Doubling()
    net.add(nn.Dense(3, in_units=2), nn.Activation("relu"))
    net.initialize(dlc.init.One())
    x = np.ones((1, 2))
    assert net(x).asnumpy().tolist() == [[4.0, 4.0, 4.0]]
    net.hybridize()
    assert net(x).asnumpy().tolist() == [[4.0, 4.0, 4.0]]
    assert "Doubling(" in repr(net)
