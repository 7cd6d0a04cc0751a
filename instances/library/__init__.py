"""memplace-lib: named, versioned sets of instances with their best known solutions and
certified bounds (what MIPLIB, QAPLIB and TSPLIB are for their problems).

A library version lives in one folder, `memplace-lib-N/` beside this file (package data):

- `library.json`: the manifest (`format: "memplace-lib/N"`), one entry per instance and
  problem (`static`, `residency`, `packing`), and the pairs left out with the reason;
- `instances/`: instance files that are not built-in catalog instances (ONNX imports,
  the zoo's exports), copied so the library needs nothing outside itself;
- `solutions/`: the best known solution of each entry (`memplace-solution/1` JSON, or
  MiniMalloc CSV with offsets for packing);
- `certificates/`: what makes each stored bound cheap to re-check (see `BOUND_KINDS`).

An entry names its instance (a catalog name, or a file of `instances/`) with the sha256
of its canonical form, its split (`train` / `test`, from a hash of the workload's name so
one program is never on both sides), the default's objective, the best known objective
with the provenance of the solver run that found it, and every bound with its kind,
certificate and provenance. A frozen version never changes: its content hash is pinned by
a test, and a change is a new version folder.

This module only reads: the `memplace lib` commands (`memplace.bench.library`) check,
improve and score. It builds on the model alone, so the environments can sample from a
library's split.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memplace.model.core.errors import MemplaceError

ROOT = Path(__file__).resolve().parent
FORMAT = "memplace-lib/{version}"
PROBLEMS = ("static", "residency", "packing")
SPLITS = ("train", "test")
MANIFEST = "library.json"  # the manifest file in a library's folder
TEST_SHARE = 4  # one workload in this many goes to the test split
# The content hash of every frozen version (`content_hash`): `verify` and a test hold the
# folder to it, so a frozen version cannot change silently.
FROZEN: dict[str, str] = {
    "memplace-lib/1": "a610bd8bb080140282a4900e718e243d81afb7ec29c81423db272f067e2866e1",
    "memplace-lib/2": "f57d2a62be033bf979656676314aebb2dadd46b8a5bf95ca14d69be28d534239",
    "memplace-lib/3": "02b8301ac99e5a2c50d15ce0ae02725c5ab4c20bca141df72d2fd1744b82e365",
    "memplace-lib/4": "a68dbadacc6c5ac59b03f81537ba37a85230ca7588f3464934b6b128714de83f",
    "memplace-lib/5": "49ba42207ca0e239a8ca18a0a2df4443c6d9cf8fda30a5403dd582c8dc8f2d02",
    "memplace-lib/6": "de4c9ee3428d723e7e1eebe04d878dcad65990626090dd2e993a58b21bbca71c",
    "memplace-lib/7": "e76417c3c9d42d415df5b97402979c94b45151c76d1dc97504a5ca4318bb9360",
    "memplace-lib/8": "18dfcc2625cb2528fe911bd1f6392e10dea88095c0b11581a6b990ca62bd19a0",
    "memplace-lib/9": "6eb0a77a67cb1c7a4cd016afa78d236dd6d62a1e644077b0a3f9ed08b733b967",
    "memplace-lib/10": "41b36015831fae453297b05681a8c4cde828e24c14381f02eb7b40d3930b18e6",
}
# `memplace-lib/N[:split]`, or `memplace-lib[:split]` for the newest version in the package
SPEC = re.compile(r"memplace-lib(?:/([0-9]+))?(?::(train|test|all))?")

# What a certificate is, per kind of bound. `checkable`: verify recomputes the bound from
# the instance and the certificate in well under a second; the others are recorded with
# their provenance but are proofs nobody can re-check without solving again.
BOUND_KINDS: dict[str, tuple[bool, str]] = {
    "closed-form": (True, "a formula of the instance alone (memplace.model.residency.bounds."
                          "lower_bound: fastest level, per-op capacity, last-level channel); the "
                          "certificate is the formula's name: verify recomputes it"),
    "lp-dual": (True, "a dual vector of the LP relaxation of the problem's MILP (static: "
                      "memplace.solvers.static.milp_highs; residency: memplace.solvers.residency."
                      "relaxation); verify rebuilds the LP from the instance, takes the reduced "
                      "costs c - A'y, and recomputes the dual objective (weak duality: any y with "
                      "reduced costs of the right sign on unbounded columns bounds the LP); the "
                      "residency access relaxation (memplace.solvers.residency.machinery.access_bound) also "
                      "stores the ceiling it was built with, which must be at least the entry's "
                      "best known latency, and so does the capped relaxation (memplace.solvers."
                      "certificate, model residency-relaxation-capped: the residency relaxation's "
                      "LP with its interval columns capped by that ceiling, so any dual vector "
                      "proves a bound), the delivery relaxation (memplace.solvers.residency.machinery."
                      "delivery_bound, model residency-delivery) and a branch-and-bound tree over "
                      "it (memplace.solvers.lp_tree, model residency-delivery-tree: its disjunctions "
                      "on homes and one dual vector per leaf; verify walks the tree and takes the "
                      "least leaf bound)"),
    "peak-live": (True, "packing: the largest total size of buffers alive at one time; verify "
                        "recomputes it from the buffers"),
    "branch-and-bound": (False, "HiGHS's proven dual bound of a MILP after branch and bound: "
                                "its proof is the search tree, not stored; re-checking means "
                                "solving again (not cheap)"),
    "exhaustion": (False, "packing: heights proven infeasible by exhaustive search; re-checking "
                          "means searching again (not cheap)"),
}


@dataclass
class Entry:
    """One instance x problem of a library (the manifest's entry, as read)."""

    id: str
    problem: str
    instance: str  # catalog name, or "instances/FILE" inside the library folder
    name: str  # the instance's own name
    sha256: str  # of the canonical instance file (packing: of the CSV bytes)
    split: str
    ops: int
    default: dict[str, Any]  # {"solver", "objective"}: the baseline speedups are measured against
    best: dict[str, Any]  # {"objective", "file", "provenance"}
    bounds: list[dict[str, Any]]  # {"value", "kind", "certificate", "provenance"}
    data: dict[str, Any] = field(default_factory=dict)  # the whole manifest entry

    @property
    def bound(self) -> float | None:
        """The best proven bound (any kind)."""
        values = [b["value"] for b in self.bounds]
        return max(values) if values else None

    @property
    def certified_bound(self) -> float | None:
        """The best bound verify can re-check cheaply."""
        values = [b["value"] for b in self.bounds if BOUND_KINDS[b["kind"]][0]]
        return max(values) if values else None

    @property
    def gap(self) -> float | None:
        """Relative gap of the best known to the best bound (0 = optimal)."""
        return _gap(self.best["objective"], self.bound)

    @property
    def certified_gap(self) -> float | None:
        return _gap(self.best["objective"], self.certified_bound)

    @property
    def status(self) -> str:
        gap = self.gap
        return "open" if gap is None else ("optimal" if gap <= OPTIMAL_GAP else f"gap {100 * gap:.2f}%")

    @property
    def unit(self) -> str:
        return "bytes" if self.problem == "packing" else "s"


OPTIMAL_GAP = 1e-6  # relative gap under which a best known counts as optimal


def _gap(best: float, bound: float | None) -> float | None:
    if bound is None or bound <= 0:
        return None
    return max(0.0, best / bound - 1.0)


@dataclass
class Library:
    """A library version as read from its folder."""

    version: int
    folder: Path
    entries: list[Entry]
    dropped: list[dict[str, Any]]
    manifest: dict[str, Any]
    # each entry as read (canonical JSON by id): what a save compares with to write only
    # the entries this process changed (`store.save`)
    loaded: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return FORMAT.format(version=self.version)

    def entry(self, key: str) -> Entry:
        for e in self.entries:
            if e.id == key:
                return e
        matches = [e for e in self.entries if e.name == key]
        if len(matches) == 1:
            return matches[0]
        known = sorted(e.id for e in (matches or self.entries))
        raise MemplaceError(f"{self.name} has no entry {key!r}"
                            + (f"; it is in: {', '.join(known)}" if matches else
                               f"; list them with 'memplace lib list'"))

    def path(self, relative: str) -> Path:
        return self.folder / relative

    def instance_source(self, entry: Entry) -> str | Path:
        """A catalog name, or the path of the library's own copy of the instance."""
        return self.path(entry.instance) if entry.instance.startswith("instances/") else entry.instance

    def split(self, which: str = "all", problem: str | None = None) -> list[Entry]:
        return [e for e in self.entries if (which == "all" or e.split == which)
                and (problem is None or e.problem == problem)]


def folder_of(version: int) -> Path:
    return ROOT / f"memplace-lib-{version}"


def versions() -> list[int]:
    return sorted(int(p.name.rsplit("-", 1)[1]) for p in ROOT.glob("memplace-lib-*")
                  if (p / MANIFEST).is_file())


def latest() -> int:
    """The newest library version in the package (frozen or not): what every command,
    plan and environment uses when no version is named."""
    found = versions()
    if not found:
        raise MemplaceError(f"no library version in {ROOT}")
    return found[-1]


# the version a library of a user's own folder carries (`memplace lib add --lib FOLDER`):
# never one of the package's, so no pinned hash is checked against it
USER_VERSION = 0


def is_spec(text: str) -> bool:
    """Whether `text` names a library (`memplace-lib`, `memplace-lib/N`, with a split or not)."""
    return bool(SPEC.fullmatch(text))


def resolve(spec: str | int | None = None) -> str:
    """`memplace-lib/N` of a spec, a version number or None (the newest version)."""
    if spec is None:
        return FORMAT.format(version=latest())
    if str(spec).isdigit():
        return FORMAT.format(version=int(spec))
    match = SPEC.fullmatch(str(spec))
    if not match:
        raise MemplaceError(f"library {spec!r} is not memplace-lib[/N][:train|:test|:all]")
    return FORMAT.format(version=int(match.group(1)) if match.group(1) else latest())


def split_of(workload: str) -> str:
    """`test` for one workload in TEST_SHARE (a hash of its name: deterministic, and the
    same program on every preset lands on the same side), else `train`."""
    digest = hashlib.sha256(workload.encode("utf-8")).digest()
    return "test" if digest[0] % TEST_SHARE == 0 else "train"


def entry_of(raw: dict[str, Any]) -> Entry:
    """A manifest entry as an Entry (KeyError if a field is missing). The entry's dicts
    and lists are the manifest's own: what a writer changes in them is what it saves."""
    return Entry(raw["id"], raw["problem"], raw["instance"], raw["name"], raw["sha256"],
                 raw["split"], int(raw.get("ops", 0)), raw["default"], raw["best"],
                 raw.setdefault("bounds", []), raw)


def names_folder(version: int | str | Path | None) -> bool:
    """Whether `version` (a `--lib` value) names a folder rather than a version: a path,
    or text that is neither a version number nor a spec."""
    return isinstance(version, Path) or (isinstance(version, str) and not version.isdigit()
                                         and not SPEC.fullmatch(version))


def read_library(version: int | str | Path | None = None) -> Library:
    """A library by version number, by `memplace-lib/N`, by folder, or (None or
    `memplace-lib`) the newest version in the package."""
    if names_folder(version):
        # absolute: `lib improve --scheduler` sends the folder's paths to Dask workers,
        # whose working directory need not be this one
        folder = Path(version).absolute()
    else:
        folder = folder_of(int(resolve(version).rsplit("/", 1)[1]))
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise MemplaceError(f"no library at {folder} (versions here: "
                            f"{', '.join(map(str, versions())) or 'none'})")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemplaceError(f"{manifest_path}: not a readable library manifest ({exc})") from None
    fmt = manifest.get("format", "")
    match = re.fullmatch(r"memplace-lib/([0-9]+)", str(fmt))
    if not match:
        raise MemplaceError(f"{manifest_path}: format {fmt!r} is not memplace-lib/N")
    entries = []
    for raw in manifest.get("entries", []):
        try:
            entries.append(entry_of(raw))
        except KeyError as exc:
            raise MemplaceError(f"{manifest_path}: entry {raw.get('id', '?')!r} has no "
                                f"{exc.args[0]!r}") from None
        unknown = [b["kind"] for b in entries[-1].bounds if b.get("kind") not in BOUND_KINDS]
        if unknown:
            raise MemplaceError(f"{manifest_path}: entry {raw['id']!r}: unknown bound kind "
                                f"{unknown[0]!r}; known: {', '.join(BOUND_KINDS)}")
    return Library(int(match.group(1)), folder, entries, list(manifest.get("dropped", [])), manifest,
                   {e.id: canonical_entry(e.data) for e in entries})


def canonical_entry(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True)


def content_hash(folder: Path) -> str:
    """sha256 over every file of a library folder (relative path and bytes, sorted)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(".") or "/." in rel or "__pycache__" in rel:
            continue
        digest.update(rel.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def instance_set(spec: str, problem: str | None = None) -> list[str | Path]:
    """The program instances of `memplace-lib/N:train` (or `:test`, `:all`; default all;
    `memplace-lib:SPLIT` for the newest version) for one problem, or for either of static
    and residency (None), as catalog names or file paths."""
    match = SPEC.fullmatch(spec)
    if not match:
        raise MemplaceError(f"instance set {spec!r} is not memplace-lib[/N][:train|:test|:all]")
    lib = read_library(resolve(spec))
    chosen = [e for e in lib.split(match.group(2) or "all", problem) if e.problem != "packing"]
    if not chosen:
        raise MemplaceError(f"{spec} has no {problem or 'program'} instances")
    return list(dict.fromkeys(lib.instance_source(e) for e in chosen))
