"""The Python examples run as a user runs them."""
import os
import subprocess
import sys

from conftest import BUILD_DIR, SOURCE_DIR


def run_example(name, *args):
    env = dict(os.environ, PYTHONPATH=str(BUILD_DIR / "python"))
    return subprocess.run([sys.executable, str(SOURCE_DIR / "examples" / "python" / name), *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_device_walkthrough():
    result = run_example("devices.py")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "DeviceMismatchError" in result.stdout
    assert "created in the scope: cpu(1)" in result.stdout or "gpu(1)" in result.stdout
    lines = [l for l in result.stdout.splitlines() if l.startswith("prediction on")]
    assert len(lines) == 2 and lines[0].split(" ", 3)[3] == lines[1].split(" ", 3)[3]


def test_training_script_command_line(tmp_path):
    result = run_example("train_fashion_mnist.py", "--epochs", "1", "--limit", "256",
                         "--devices", "cpu:0,cpu:1", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[Epoch 1] test: accuracy=" in result.stdout
    assert (tmp_path / "leafnet.safetensors").exists() and (tmp_path / "model.dlc").exists()
    bad = run_example("train_fashion_mnist.py", "--devices", "tpu:0")
    assert bad.returncode != 0 and "tpu:0" in bad.stderr
