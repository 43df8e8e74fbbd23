"""dlc.dist: a script as one process of a job launched by mpirun. Alone it is a job of
one; under `mpirun -np 2` the tutorial's loop (examples/python) trains what one process
with both devices trains, parameter for parameter."""
import os
import shutil
import subprocess
import sys

import numpy as onp
import pytest

import dlc
from dlc import dist, gluon, np, npx

from conftest import BUILD_DIR, SOURCE_DIR, assert_same_parameters

MPIRUN = shutil.which("mpirun")
EXAMPLE = SOURCE_DIR / "examples" / "python" / "train_fashion_mnist.py"


def test_alone_a_job_of_one():
    dist.init()
    assert (dist.rank(), dist.size(), dist.local_rank(), dist.local_size()) == (0, 1, 0, 1)
    assert dist.describe() == "one process"
    dist.barrier()
    devices = [npx.cpu(0), npx.cpu(1)]
    assert dist.local_devices(devices) == devices


def test_alone_all_reduce_adds_this_process_parts_in_order():
    a = np.random.uniform(-1, 1, (3, 4))
    b = np.random.uniform(-1, 1, (3, 4)).copyto(npx.cpu(1))
    total = dist.all_reduce([a, b])
    assert total.device == npx.cpu(0)
    onp.testing.assert_array_equal(total.asnumpy(), a.asnumpy() + b.asnumpy())


def test_alone_broadcast_keeps_the_values():
    x = np.random.uniform(-1, 1, (5,))
    before = x.asnumpy().copy()
    dist.broadcast(x)
    onp.testing.assert_array_equal(x.asnumpy(), before)


def test_bad_calls_name_the_problem():
    with pytest.raises(ValueError, match="do not divide among"):
        dist.local_devices([])
    with pytest.raises(dlc.DLCError, match="float32"):
        dist.all_reduce([np.array([1, 2], dtype="int32")])
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(np.zeros((6, 2)), np.zeros((6,))), 3)
    with pytest.raises(ValueError, match="does not divide among 2 processes"):
        loader.shard(0, 2)


def test_shard_takes_consecutive_slices_of_every_batch():
    data = np.arange(16).reshape(16, 1).astype("float32")
    dataset = gluon.data.ArrayDataset(data, np.arange(16))
    whole = [b.asnumpy().ravel().tolist()
             for b, _ in gluon.data.DataLoader(dataset, 8, shuffle=True, seed=3)]
    parts = []
    for part in range(2):
        loader = gluon.data.DataLoader(dataset, 8, shuffle=True, seed=3)
        loader.shard(part, 2)
        parts.append([b.asnumpy().ravel().tolist() for b, _ in loader])
    for k, batch in enumerate(whole):
        assert parts[0][k] + parts[1][k] == batch


@pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (Debian: openmpi-bin)")
@pytest.mark.parametrize("compiled", [False, True], ids=["trainer-step", "compiled-step"])
def test_two_processes_train_like_one_with_both_devices(tmp_path, compiled):
    flags = ["--epochs", "1", "--limit", "640", "--devices", "cpu:0,cpu:1"] + (
        ["--compiled-step"] if compiled else [])
    environment = dict(os.environ, PYTHONPATH=str(BUILD_DIR / "python"))
    one = subprocess.run([sys.executable, str(EXAMPLE), *flags, "--out", str(tmp_path / "one")],
                         capture_output=True, text=True, timeout=900, env=environment)
    assert one.returncode == 0, one.stdout + one.stderr
    two = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                          "--mca", "btl_vader_single_copy_mechanism", "none",
                          "-np", "2", sys.executable, str(EXAMPLE), *flags,
                          "--out", str(tmp_path / "two")],
                         capture_output=True, text=True, timeout=900, env=environment)
    assert two.returncode == 0, two.stdout + two.stderr
    assert "(2 processes (Open MPI" in two.stdout
    summaries = [[l for l in run.stdout.splitlines() if "] training" in l or "] test" in l]
                 for run in (one, two)]
    assert summaries[0] and summaries[0] == summaries[1]
    assert_same_parameters(tmp_path / "one" / "leafnet.safetensors",
                           tmp_path / "two" / "leafnet.safetensors")
