"""What MXNet 1.x Gluon code expects of a block, for scripts written before MXNet 2:
``hybrid_forward(self, F, x, ...)`` with the block's own parameters passed by keyword,
``self.params.get(...)`` to make them, ``name_scope()`` and the ``prefix``/``params``
constructor arguments::

    class Scale(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(Scale, self).__init__(**kwargs)
            with self.name_scope():
                self.dense = nn.Dense(4)
                self.alpha = self.params.get("alpha", shape=(1,), init="ones")

        def hybrid_forward(self, F, x, alpha):
            return F.relu(self.dense(x)) * alpha

``F`` is dlc's ``np`` and ``npx`` (``F.np``, ``F.npx``, and their functions by name), plus
the MXNet 1.x operators Gluon code calls most (``F.Activation``, ``F.FullyConnected``,
``F.Convolution``, ``F.Pooling``, ``F.Flatten``, ``F.elemwise_add``, ``F.broadcast_mul``,
``F.concat``, ...); an operator with no counterpart is an AttributeError naming it.
"""
import contextlib

from .. import np as _np
from .. import npx as _npx
from .parameter import Parameter, ParameterDict


def _activation(data, act_type="relu", **_):
    return _npx.activation(data, act_type=act_type)


def _fully_connected(data, weight, bias=None, num_hidden=None, no_bias=False, flatten=True, **_):
    return _npx.fully_connected(data, weight, bias, no_bias=no_bias, flatten=flatten)


def _convolution(data, weight, bias=None, kernel=None, stride=1, pad=0, dilate=1, num_filter=None,
                 num_group=1, no_bias=False, **_):
    return _npx.convolution(data, weight, bias, stride=stride or 1, pad=pad or 0,
                            dilate=dilate or 1, num_group=num_group, no_bias=no_bias)


def _deconvolution(data, weight, bias=None, kernel=None, stride=1, pad=0, adj=0, dilate=1,
                   num_filter=None, num_group=1, no_bias=False, **_):
    return _npx.deconvolution(data, weight, bias, stride=stride or 1, pad=pad or 0,
                              adj=adj or 0, dilate=dilate or 1, num_group=num_group,
                              no_bias=no_bias)


def _pooling(data, kernel=(1, 1), pool_type="max", stride=None, pad=0, global_pool=False,
             pooling_convention="valid", count_include_pad=True, **_):
    if global_pool:
        kernel, stride, pad = data.shape[2:], data.shape[2:], 0
    return _npx.pooling(data, kernel, stride=stride, pad=pad or 0, pool_type=pool_type,
                        pooling_convention=pooling_convention, count_include_pad=count_include_pad)


def _concat(*data, dim=1, **_):
    return _np.concatenate(list(data), axis=dim)


# MXNet 1.x operator names (mx.nd / mx.sym) and their dlc counterparts.
_LEGACY = {
    "Activation": _activation,
    "FullyConnected": _fully_connected,
    "Convolution": _convolution,
    "Deconvolution": _deconvolution,
    "Pooling": _pooling,
    "Flatten": _npx.batch_flatten,
    "flatten": _npx.batch_flatten,
    "Concat": _concat,
    "concat": _concat,
    "elemwise_add": _np.add,
    "elemwise_sub": _np.subtract,
    "elemwise_mul": _np.multiply,
    "elemwise_div": _np.divide,
    "broadcast_add": _np.add,
    "broadcast_sub": _np.subtract,
    "broadcast_mul": _np.multiply,
    "broadcast_div": _np.divide,
    "broadcast_maximum": _np.maximum,
    "broadcast_minimum": _np.minimum,
    "Dropout": lambda data, p=0.5, **_: _npx.dropout(data, p),
    "LeakyReLU": lambda data, gamma=None, act_type="leaky", slope=0.25, **_: _npx.leaky_relu(
        data, gamma, act_type=act_type, slope=slope),
    "LayerNorm": lambda data, gamma, beta, axis=-1, eps=1e-5, **_: _npx.layer_norm(
        data, gamma, beta, axis=axis, eps=eps),
    "InstanceNorm": lambda data, gamma, beta, eps=1e-3, **_: _npx.instance_norm(
        data, gamma, beta, eps=eps),
    "GroupNorm": lambda data, gamma, beta, num_groups=1, eps=1e-5, **_: _npx.group_norm(
        data, gamma, beta, num_groups=num_groups, eps=eps),
    "UpSampling": lambda *data, scale=2, sample_type="nearest", **_: _npx.upsampling(
        data[0], scale=scale, sample_type=sample_type),
    "pad": lambda data, mode="constant", pad_width=(), constant_value=0, **_: _npx.pad(
        data, mode=mode, pad_width=list(pad_width), constant_value=constant_value),
    "Pad": lambda data, mode="constant", pad_width=(), constant_value=0, **_: _npx.pad(
        data, mode=mode, pad_width=list(pad_width), constant_value=constant_value),
    "hard_sigmoid": lambda data, alpha=0.2, beta=0.5, **_: _npx.hard_sigmoid(data, alpha, beta),
    "clip": lambda data, a_min, a_max, **_: _np.clip(data, a_min, a_max),
    "SoftmaxActivation": lambda data, **_: _npx.softmax(data, axis=-1),
    "Embedding": lambda data, weight, input_dim=None, output_dim=None, **_: _npx.embedding(
        data, weight, input_dim, output_dim),
    "take": lambda a, indices, axis=0, mode="raise", **_: _np.take(a, indices, axis=axis, mode=mode),
    "slice": lambda data, begin, end, step=None, **_: _npx.slice(data, begin, end, step),
    "slice_axis": lambda data, axis, begin, end, **_: _npx.slice_axis(data, axis, begin, end),
}


class _Contrib:
    """``F.contrib``: the contrib operators vision code calls."""

    @staticmethod
    def BilinearResize2D(data, height=1, width=1, align_corners=True, **_):
        return _npx.bilinear_resize2d(data, height, width, align_corners=align_corners)


class _F:
    """The ``F`` of hybrid_forward: dlc's np and npx for both of MXNet 1.x's (nd, sym)."""
    np = _np
    npx = _npx
    contrib = _Contrib()

    def __getattr__(self, name):
        if name in _LEGACY:
            return _LEGACY[name]
        for namespace in (_npx, _np):
            if hasattr(namespace, name):
                return getattr(namespace, name)
        raise AttributeError(
            f"F.{name}: MXNet 1.x's operator '{name}' has no dlc counterpart; write it with "
            f"F.np / F.npx functions (dlc's np and npx)")


F = _F()


class BlockParams(ParameterDict):
    """``self.params`` of a block: its parameters by path, and ``get`` to make one of its own
    (MXNet 1.x's ``self.params.get(name, shape=..., init=...)``)."""

    def __init__(self, block, params):
        super().__init__(params)
        self._block = block

    def get(self, name, shape=None, init=None, dtype="float32", grad_req="write",
            allow_deferred_init=False, **_):
        own = self._block.__dict__.setdefault("_own_params", {})
        if name in own:
            return own[name]
        if shape is None or any(int(d) <= 0 for d in shape):
            raise ValueError(
                f"params.get('{name}'): dlc needs the whole shape of a parameter made here "
                f"(got {shape}); layers infer theirs, a parameter of your own does not")
        parameter = Parameter(name, grad_req=grad_req, shape=tuple(shape), dtype=dtype, init=init)
        self._block._register_parameter(name, parameter)
        own[name] = parameter
        self[name] = parameter
        return parameter


def call_hybrid_forward(block, x, *args):
    """forward(x, ...) of a block written with hybrid_forward: its own parameters' data on
    x's device go in by keyword, as MXNet 1.x passes them."""
    own = block.__dict__.get("_own_params", {})
    device = getattr(x, "device", None)
    params = {name: p.data(device) for name, p in own.items()}
    return block.hybrid_forward(F, x, *args, **params)


@contextlib.contextmanager
def name_scope():
    """MXNet 1.x's name scope: parameter names are paths in dlc (as in MXNet 2), so the
    scope changes nothing."""
    yield
