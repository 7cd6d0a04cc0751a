"""Reaching Dask: `memplace bench --dask ADDRESS|local` and `memplace lib improve
--scheduler ADDRESS` both connect here, so a missing `distributed` package, or an address
that is malformed or that no scheduler answers, is one error naming it (exit status 2),
never Dask's traceback."""
from __future__ import annotations

from types import ModuleType
from typing import Any

from memplace.model.core.errors import MemplaceError


def distributed(option: str) -> ModuleType:
    """The `distributed` package, or one error saying which extra brings it."""
    try:
        import distributed as module
    except ModuleNotFoundError:
        raise MemplaceError(f"{option} needs the optional 'distributed' package: "
                            "pip install 'memplace[dask]'") from None
    return module


def local_cluster(workers: int, option: str) -> Any:
    """A Dask cluster of `workers` single-threaded worker processes on this machine."""
    return distributed(option).LocalCluster(n_workers=workers, threads_per_worker=1,
                                            processes=True, dashboard_address=None)


def connect(address: Any, option: str) -> Any:
    """A `distributed.Client` of `address` (a scheduler address, or a cluster object such
    as `local_cluster`'s); `option` names the command-line option the address came from."""
    client_class = distributed(option).Client
    try:
        return client_class(address)
    except ValueError as exc:  # no port, an unknown scheme
        raise MemplaceError(f"{option} {address}: not a Dask scheduler address ({exc})") from None
    except OSError as exc:  # nothing answers there within Dask's connect timeout
        raise MemplaceError(f"{option} {address}: no Dask scheduler answers there ({exc}); "
                            "start one with `dask scheduler` and its workers with "
                            "`dask worker ADDRESS`") from None
