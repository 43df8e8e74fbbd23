"""ONNX models in dlc: ``dlc.onnx.import_model(path)`` gives a block that runs the model
eagerly, hybridized (compiled through the dlc dialect) or fine-tuned (its initializers
are its parameters), as MXNet's ``mx.onnx.import_model`` and ``SymbolBlock.imports`` did.
``dlc.onnx.export_model(block, path, input_shapes)`` (or ``block.export_onnx(path,
input_shapes)``) writes a hybrid block as an ONNX file (MXNet's ``mx.onnx.export_model``).

docs/onnx.md (in the repository) lists the ONNX ops and opsets dlc imports.
"""
from ._dlc.onnx import OnnxBlock, export_model, import_model

__all__ = ["import_model", "export_model", "OnnxBlock"]
