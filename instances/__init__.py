"""Benchmark instances: workload generators, hardware presets, synthetic DAGs, the
committed instance files and loading them by name."""
from memplace.instances.catalog import (COMMITTED, DATA_DIR, RESIDENCY_SET, WORKLOADS,
                                        build_instance, builtin_names, builtin_path,
                                        committed_specs, dumps, load, regenerate,
                                        residency_names, workload)
from memplace.instances.hardware import HARDWARE, hardware_preset
from memplace.instances.synthetic import synthetic_workload

__all__ = [
    "COMMITTED", "DATA_DIR", "HARDWARE", "RESIDENCY_SET", "WORKLOADS", "build_instance",
    "builtin_names", "builtin_path", "committed_specs", "dumps", "hardware_preset", "load",
    "regenerate", "residency_names", "synthetic_workload", "workload",
]
