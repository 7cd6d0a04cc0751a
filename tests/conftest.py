"""Tests follow the source folders (core, static, packing, bench, instances, cli; docs for the README and the site); the shared
helpers (`randominst.py`, `bench_solvers.py`) stay here, importable from every folder
because pytest puts this conftest's folder on sys.path."""
