#!/usr/bin/env bash
# Installs the peers dlc is measured against into bench/.venv (not part of CI):
# MXNet 1.9.1 (the system the seed tutorial documents; it needs numpy < 1.24) and PyTorch.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --upgrade pip
"$venv/bin/pip" install "mxnet==1.9.1" "numpy<1.24" torch
"$venv/bin/python" - <<'PY'
import mxnet, torch, numpy
print("mxnet", mxnet.__version__, "torch", torch.__version__, "numpy", numpy.__version__)
PY
