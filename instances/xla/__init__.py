"""Import XLA programs (HLO text from JAX) as memplace instances, with XLA's heap as a
packing baseline. Reading a saved HLO text or dump needs nothing but memplace;
compiling a JAX program needs the optional extra `memplace[xla]`.
"""
from memplace.instances.xla.errors import XlaImportError
from memplace.instances.xla.heap import HeapBaseline, heap_baseline, write_baseline
from memplace.instances.xla.importer import cost_comparison, from_hlo_text, read_hlo
from memplace.instances.xla.sources import XlaImport, import_xla

__all__ = ["HeapBaseline", "XlaImport", "XlaImportError", "cost_comparison", "from_hlo_text",
           "heap_baseline", "import_xla", "read_hlo", "write_baseline"]
