"""The one error of the XLA importer: bad or unsupported HLO, named by file, line or instruction."""
from __future__ import annotations

from memplace.model.core.errors import MemplaceError


class XlaImportError(MemplaceError):
    """HLO that cannot be imported: the message names the file, line or instruction at fault."""
