"""autograd: record, pause, train/predict mode, backward, gradients checked numerically."""
import numpy as onp
import pytest

import dlc
from dlc import autograd, np, npx


def finite_difference(f, x_np, eps=1e-2):
    grad = onp.zeros_like(x_np, dtype=onp.float64)
    for i in onp.ndindex(*x_np.shape):
        up, down = x_np.astype(onp.float64), x_np.astype(onp.float64)
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def test_gradient_of_a_composite_function_matches_finite_differences():
    x_np = onp.random.RandomState(3).uniform(0.5, 1.5, (2, 3)).astype(onp.float32)
    w_np = onp.random.RandomState(4).uniform(-1, 1, (3, 2)).astype(onp.float32)

    def f_np(x):
        h = onp.tanh(x @ w_np)
        return float((h * h).sum() + onp.exp(x).mean())

    x = np.array(x_np)
    x.attach_grad()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        h = np.tanh(np.matmul(x, np.array(w_np)))
        y = (h * h).sum() + np.exp(x).mean()
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), finite_difference(f_np, x_np), rtol=2e-2,
                                atol=2e-3)


def test_modes_pause_and_grad_req_add():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    with autograd.predict_mode():
        assert not autograd.is_training()
    x = np.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    assert x.grad.asnumpy().tolist() == [4.0, 8.0]  # 2x, accumulated twice
    with pytest.raises(ValueError):
        x.attach_grad(grad_req="sometimes")


def test_backward_with_head_gradients_and_several_heads():
    x = np.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        a = x * 2
        b = x * x
    autograd.backward([a, b], [np.array([1.0, 1.0, 1.0]), np.array([0.5, 0.5, 0.5])])
    assert x.grad.asnumpy().tolist() == [3.0, 4.0, 5.0]  # 2 + 0.5 * 2x
    with autograd.record():
        c = (x * 3).sum()
    c.backward(out_grad=np.array(2.0))
    assert x.grad.asnumpy().tolist() == [6.0, 6.0, 6.0]
    assert x.detach().grad is None


def test_in_place_writes_are_refused_while_recording():
    x = np.ones(3)
    with autograd.record():
        with pytest.raises(NotImplementedError, match="in-place"):
            x += 1
        with pytest.raises(NotImplementedError):
            x[0] = 2
