"""Benchmark instances: workload generators, hardware presets, synthetic DAGs, the
committed instance files and loading them by name."""
from memplace.instances.catalog import (COMMITTED, DATA_DIR, WORKLOADS, build_instance,
                                        builtin_names, builtin_path, dumps, load, regenerate,
                                        workload)
from memplace.instances.hardware import HARDWARE, hardware_preset
from memplace.instances.synthetic import synthetic_workload

__all__ = [
    "COMMITTED", "DATA_DIR", "HARDWARE", "WORKLOADS", "build_instance", "builtin_names",
    "builtin_path", "dumps", "hardware_preset", "load", "regenerate", "synthetic_workload",
    "workload",
]
