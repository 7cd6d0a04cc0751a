"""Writing a file whole or not at all: a crash never leaves a half-written file behind,
and a failure to write (a missing folder, a full disk, a folder in the way) is one
MemplaceError naming the file, with whatever was at the path left as it was."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator, TextIO

from memplace.model.core.errors import MemplaceError


@contextlib.contextmanager
def atomic_write(path: str | Path, what: str = "file", error: type[MemplaceError] = MemplaceError,
                 newline: str | None = None) -> Iterator[TextIO]:
    """A text file (UTF-8) in `path`'s folder that replaces `path` once the block ends.

    On any error the temporary file is removed and `path` is left as it was; an OSError
    becomes `error` ("cannot write <what> <path>: <reason>").
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"cannot write {what} {path}: is a folder")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", newline=newline, encoding="utf-8") as out:
            yield out
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise error(f"cannot write {what} {path}: {exc.strerror or exc}") from None
        raise


def write_atomically(path: str | Path, text: str, what: str = "file",
                     error: type[MemplaceError] = MemplaceError) -> None:
    """Write `text` to `path` whole or not at all (see `atomic_write`)."""
    with atomic_write(path, what, error, newline="") as out:
        out.write(text)
