"""The zoo: real models (CNNs, vision and language transformers, decoders with a key/value
cache, speech encoders) exported from PyTorch to ONNX and imported as instances.

Reading the committed zoo (`zoo_names`, `zoo_path`, `read_index`, `table`) needs nothing
beyond memplace; exporting it again (`python -m memplace.instances.zoo.export`) needs
the dev-only extra `memplace[zoo]`.
"""
from memplace.instances.zoo.index import (INDEX_NAME, PREFIX, PROVENANCE_FIELDS, ZOO_DIR,
                                          read_index, table, zoo_names, zoo_path)

__all__ = ["INDEX_NAME", "PREFIX", "PROVENANCE_FIELDS", "ZOO_DIR", "read_index", "table",
           "zoo_names", "zoo_path"]
