"""`pip install ./python` (a PEP 517 build through scikit-build-core) installs a working
package into a virtualenv. The build backend comes from PyPI; on a machine that cannot
fetch from it (no network, or a TLS-intercepting proxy whose certificate authority the
machine does not trust, as in CI's fresh root) the test says so and is skipped."""
import os
import subprocess
import sys
import urllib.request

import pytest

from conftest import SOURCE_DIR


def pypi_reachable():
    try:
        urllib.request.urlopen("https://pypi.org/simple/scikit-build-core/", timeout=20).close()
        return True
    except OSError:  # URLError (certificates included) and timeouts
        return False


@pytest.mark.skipif(not pypi_reachable(), reason="https://pypi.org cannot be fetched from here "
                    "(no network, or an untrusted certificate): pip cannot get the build "
                    "backend (scikit-build-core)")
def test_pip_install_into_a_virtualenv(tmp_path):
    venv = tmp_path / "venv"
    # System site packages: numpy comes from Debian, as the set-up installed it.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet",
                              "--disable-pip-version-check", str(SOURCE_DIR / "python")],
                             capture_output=True, text=True, env=env, cwd=str(tmp_path),
                             timeout=3600)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-5000:]
    script = (
        "import dlc\n"
        "from dlc import np, npx, gluon, autograd\n"
        "assert 'site-packages' in dlc.__file__, dlc.__file__\n"
        "net = gluon.nn.HybridSequential()\n"
        "net.add(gluon.nn.Dense(4, activation='relu'), gluon.nn.Dense(2))\n"
        "net.initialize(device=[npx.cpu(0), npx.cpu(1)])\n"
        "net.hybridize()\n"
        "x = np.ones((3, 5))\n"
        "with autograd.record():\n"
        "    y = net(x).sum()\n"
        "y.backward()\n"
        "print('installed', net(x).shape)\n")
    run = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True,
                         text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert run.returncode == 0 and "installed (3, 2)" in run.stdout, run.stderr[-3000:]
