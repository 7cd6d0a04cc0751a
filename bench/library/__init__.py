"""memplace-lib's commands as a library: check (`verify`), fill and improve (`improve`),
score submitted solutions (`score`) and write the browsable site (`site`). The data model
and reading are `memplace.instances.library`."""
