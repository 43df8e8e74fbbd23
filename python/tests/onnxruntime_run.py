"""Runs an ONNX file with ONNX Runtime (in bench/.venv) for test_onnx.py:

    onnxruntime_run.py MODEL.onnx INPUTS.safetensors OUTPUTS.safetensors

The inputs file holds one tensor per model input, under the input's name; the outputs
file gets one per output, under the output's name.
"""
import sys

import onnxruntime
from safetensors.numpy import load_file, save_file

model, inputs, outputs = sys.argv[1:4]
session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
feed = load_file(inputs)
results = session.run(None, {i.name: feed[i.name] for i in session.get_inputs()})
save_file({o.name: r for o, r in zip(session.get_outputs(), results)}, outputs)
