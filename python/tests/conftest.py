"""Shared fixtures of dlc's Python tests. They run against the package in
$DLC_BUILD_DIR/python (ctest sets PYTHONPATH) and read the repository's files from
$DLC_SOURCE_DIR."""
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("DLC_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
BUILD_DIR = pathlib.Path(os.environ.get("DLC_BUILD_DIR", SOURCE_DIR / "build"))
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
MXNET_FIXTURES = SOURCE_DIR / "unittests" / "Gluon" / "Inputs" / "mxnet"
HUGGINGFACE_FIXTURES = SOURCE_DIR / "unittests" / "Gluon" / "Inputs" / "huggingface"


def assert_same_parameters(first, second, tolerance=1e-5):
    """Two parameter files hold the same names, each tensor equal within `tolerance`."""
    import numpy as onp
    from dlc import npx
    a, b = npx.load(str(first)), npx.load(str(second))
    assert sorted(a) == sorted(b)
    for name in a:
        onp.testing.assert_allclose(a[name].asnumpy(), b[name].asnumpy(), rtol=tolerance,
                                    atol=tolerance, err_msg=name)


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def build_dir():
    return BUILD_DIR


@pytest.fixture(autouse=True)
def _seeded():
    from dlc import np
    np.random.seed(7)
