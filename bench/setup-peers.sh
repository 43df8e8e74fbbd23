#!/usr/bin/env bash
# Installs the peers dlc is measured against into bench/.venv (not part of CI):
# MXNet 1.9.1 (the system the seed tutorial documents; it needs numpy < 1.24), PyTorch, and
# ONNX Runtime with the onnx package (compare-inference.py writes the ONNX model), and
# transformers with safetensors (BERT and GPT-2 references, compare-transformers.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --upgrade pip
"$venv/bin/pip" install "mxnet==1.9.1" "numpy<1.24" torch torchvision onnx onnxruntime \
  transformers safetensors onnxscript
"$venv/bin/python" - <<'PY'
import mxnet, torch, numpy, onnx, onnxruntime, transformers
print("mxnet", mxnet.__version__, "torch", torch.__version__, "numpy", numpy.__version__,
      "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__,
      "transformers", transformers.__version__)
PY
