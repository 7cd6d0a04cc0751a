"""Import ONNX models as memplace instances (the optional extra `memplace[onnx]`).

`from_onnx(path, hardware, batch=..., dims=..., dtype_bytes=...)` reads a model as
PyTorch's exporters, tf2onnx or a model zoo write it (without its external
weights), resolves its shapes, fuses its nodes into a compiler's ops and returns
an instance dict; `to_onnx(workload)` writes a built-in workload as an ONNX graph.
"""
from memplace.instances.onnx.errors import OnnxImportError
from memplace.instances.onnx.export import save_onnx, to_onnx
from memplace.instances.onnx.importer import OnnxImportWarning, from_onnx

__all__ = ["OnnxImportError", "OnnxImportWarning", "from_onnx", "save_onnx", "to_onnx"]
