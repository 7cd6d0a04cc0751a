"""Benchmark instances: workload generators, hardware presets, synthetic DAGs, the
committed instance files (generated ones and the zoo of imported real models) and
loading them by name."""
from memplace.instances.catalog import (COMMITTED, DATA_DIR, RESIDENCY_SET, WORKLOADS,
                                        build_instance, builtin_names, builtin_path,
                                        committed_specs, dumps, load, regenerate,
                                        residency_names, workload)
from memplace.instances.hardware import HARDWARE, hardware_preset
from memplace.instances.synthetic import synthetic_workload
from memplace.instances.zoo import zoo_names

# The ONNX importer needs the optional extra `memplace[onnx]`: loaded on first use.
_ONNX_NAMES = ("from_onnx", "to_onnx", "save_onnx")


def __getattr__(name: str):
    if name in _ONNX_NAMES:
        import memplace.instances.onnx as onnx_import
        return getattr(onnx_import, name)
    raise AttributeError(f"module 'memplace.instances' has no attribute {name!r}")


__all__ = [
    "COMMITTED", "DATA_DIR", "HARDWARE", "RESIDENCY_SET", "WORKLOADS", "build_instance",
    "builtin_names", "builtin_path", "committed_specs", "dumps", "hardware_preset", "load",
    "regenerate", "residency_names", "synthetic_workload", "workload", "zoo_names",
]
