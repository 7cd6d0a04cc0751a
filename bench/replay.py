"""Re-checking stored runs: every placement in a runs file replayed against its instance.

A record holds everything needed to re-check it (CompilerGym's habit): the
instance's source and fingerprint, the placement by level names and the offsets.
`recheck` loads each instance once, asks the problem to check each stored
solution (docs/spec.md sections 3-5 and the latency claim within relative 1e-9).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memplace.bench.instance_source import load_recorded, record_problem
from memplace.bench.store import is_ok
from memplace.model import Instance
from memplace.model.core.errors import MemplaceError


@dataclass
class Finding:
    line: int  # 1-based line of the record in the runs file
    record: dict[str, Any]
    problem: str

    def __str__(self) -> str:
        r = self.record
        return f"line {self.line}: {r['instance']} {r['solver']} seed={r['seed']}: {self.problem}"


def recheck(records: list[dict[str, Any]]) -> tuple[int, list[Finding]]:
    """(records checked, findings): a finding for every record with a result whose
    placement is invalid, whose latency does not hold, or whose instance is gone."""
    instances: dict[tuple[str, str], Instance | str] = {}
    findings = []
    checked = 0
    for line, record in enumerate(records, start=1):
        if not is_ok(record):
            continue
        checked += 1
        inst = _instance(record, instances)  # or why it cannot be loaded
        problem = inst if isinstance(inst, str) else _problem(inst, record)
        if problem:
            findings.append(Finding(line, record, problem))
    return checked, findings


def _instance(record: dict[str, Any], cache: dict) -> Instance | str:
    key = (record["instance_source"], record["instance_sha256"])
    if key not in cache:
        try:
            inst = load_recorded(record)
        except MemplaceError as exc:
            cache[key] = f"cannot load instance: {exc}"
        else:
            sha = record_problem(record).fingerprint(inst)
            cache[key] = inst if sha == record["instance_sha256"] else (
                f"instance {record['instance_source']} changed since the run "
                f"(sha256 {sha[:12]}, recorded {record['instance_sha256'][:12]})")
    return cache[key]


def _problem(inst: Instance, record: dict[str, Any]) -> str | None:
    errors = record_problem(record).check_record(inst, record)
    if errors:
        return "; ".join(errors[:3])
    trace = record["trace"]
    if trace and trace[-1][2] != record["latency"]:
        return f"trace ends at {trace[-1][2]!r}, not at the recorded latency {record['latency']!r}"
    return None
