"""The one error of the ONNX importer: bad or unsupported models, named by node and tensor."""
from __future__ import annotations

from memplace.model.core.errors import MemplaceError


class OnnxImportError(MemplaceError):
    """An ONNX model that cannot be imported: the message names the node or tensor at fault."""
