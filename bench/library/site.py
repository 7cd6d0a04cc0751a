"""`memplace lib site -o DIR`: the library as a static HTML site, usable offline.

`index.html` holds one sortable table of every entry (click a header to sort; the
script is inline, nothing is fetched); each entry has a page with a picture of its
best known solution's memory over time (an inline SVG: bytes per level at each step of
the schedule, homes and windows; for packing, every buffer as a rectangle of its
lifespan and addresses) and links to the instance, solution and certificate files,
which are copied beside the pages so every link resolves without a server.
"""
from __future__ import annotations

import html
import json
import math
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from memplace.bench.library.check import load_entry_instance
from memplace.bench.library.store import file_stem
from memplace.bench.library.tables import figure, percent
from memplace.instances.library import BOUND_KINDS, MANIFEST, Entry, Library

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
W, H = 760, 260

STYLE = """body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{cursor:pointer;background:#eee}
td:first-child,th:first-child{text-align:left}"""

SORT_SCRIPT = """<script>
function sortTable(col){var t=document.getElementById('entries'),b=t.tBodies[0];
var rows=Array.prototype.slice.call(b.rows);var h=t.tHead.rows[0].cells[col];
var asc=h.getAttribute('data-order')!=='asc';
for(var i=0;i<t.tHead.rows[0].cells.length;i++)t.tHead.rows[0].cells[i].removeAttribute('data-order');
h.setAttribute('data-order',asc?'asc':'desc');
function key(r){var c=r.cells[col];var v=c.getAttribute('data-value');if(v===null)v=c.textContent;
var n=parseFloat(v);return isNaN(n)?v:n;}
rows.sort(function(x,y){var a=key(x),c=key(y);
if(typeof a==='number'&&typeof c==='number')return asc?a-c:c-a;
a=String(a);c=String(c);return asc?a.localeCompare(c):c.localeCompare(a);});
rows.forEach(function(r){b.appendChild(r);});}
</script>"""


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def _href(relative: str) -> str:
    return quote(relative)


def page_name(entry: Entry) -> str:
    return f"entries/{entry.problem}-{file_stem(entry.name)}.html"


def _num(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else repr(float(value))


def _svg_levels(loads: np.ndarray, names: list[str], capacity: list[float | None]) -> str:
    """Stacked-free line plot: bytes in each level at each step."""
    L, n = loads.shape
    top = max(float(loads.max()), 1.0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + 40}" '
             f'role="img" aria-label="memory over time">',
             f'<rect x="40" y="10" width="{W - 50}" height="{H - 20}" fill="none" stroke="#999"/>']
    for l in range(L):
        scale = float(capacity[l]) if capacity[l] else top
        pts = " ".join(f"{40 + (W - 50) * k / max(n - 1, 1):.1f},"
                       f"{H - 10 - (H - 20) * min(loads[l, k] / scale, 1.0):.1f}" for k in range(n))
        parts.append(f'<polyline fill="none" stroke="{COLOURS[l % len(COLOURS)]}" points="{pts}"/>')
        parts.append(f'<text x="{45 + 150 * l}" y="{H + 25}" fill="{COLOURS[l % len(COLOURS)]}" '
                     f'font-size="12">{html.escape(names[l])} (share of '
                     f'{"capacity" if capacity[l] else "its peak"})</text>')
    parts.append(f'<text x="40" y="{H + 8}" font-size="11">step 0</text>'
                 f'<text x="{W - 60}" y="{H + 8}" font-size="11">step {n - 1}</text></svg>')
    return "".join(parts)


def _svg_packing(buffers: list, offsets: list[int]) -> str:
    lo = min(b.lower for b in buffers)
    hi = max(b.upper for b in buffers)
    height = max(o + b.size for b, o in zip(buffers, offsets)) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" '
             f'aria-label="buffers over time">',
             f'<rect x="0" y="0" width="{W}" height="{H}" fill="none" stroke="#999"/>']
    for i, (b, o) in enumerate(zip(buffers, offsets)):
        x = W * (b.lower - lo) / max(hi - lo, 1)
        w = max(W * (b.upper - b.lower) / max(hi - lo, 1), 0.5)
        y = H - H * (o + b.size) / height
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                     f'height="{max(H * b.size / height, 0.5):.1f}" fill="{COLOURS[i % len(COLOURS)]}" '
                     f'fill-opacity="0.6" stroke="#333" stroke-width="0.2"/>')
    return "".join(parts) + "</svg>"


def picture(lib: Library, entry: Entry) -> str:
    """The SVG of the entry's best known solution."""
    instance = load_entry_instance(lib, entry)
    path = lib.path(entry.best["file"])
    if entry.problem == "packing":
        from memplace.model.packing.minimalloc_csv import read_buffers
        rows = read_buffers(path).rows
        return _svg_packing(instance, [int(r["offset"]) for r in rows])
    data = json.loads(path.read_text(encoding="utf-8"))
    index = {name: l for l, name in enumerate(instance.level_names)}
    homes = np.array([index[n] for n in data["placement"]], np.int64)
    loads = np.zeros((instance.n_levels, instance.n_ops), np.float64)
    for t in range(instance.n_tensors):
        loads[homes[t], instance.start[t]:instance.end[t] + 1] += instance.size[t]
    for w in data.get("windows", []):
        last = w["last"] if not w.get("evict") else max(w["last"], w["evict"][1] - 1)
        loads[index[w["level"]], w["start"]:last + 1] += instance.size[w["tensor"]]
    caps = [None if not math.isfinite(c) or c <= 0 else float(c) for c in instance.capacity.tolist()]
    return _svg_levels(loads, list(instance.level_names), caps)


def _copy(lib: Library, relative: str | None, out: Path) -> str | None:
    if not relative:
        return None
    target = out / "files" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lib.path(relative), target)
    return f"files/{relative}"


def _instance_file(lib: Library, entry: Entry, out: Path) -> str:
    if entry.instance.startswith("instances/"):
        return _copy(lib, entry.instance, out)
    from memplace.instances import builtin_path
    target = out / "files" / "instances" / f"{file_stem(entry.instance)}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(builtin_path(entry.instance), target)
    return target.relative_to(out).as_posix()


def _found_by(prov: dict[str, Any]) -> str:
    """Who found the best known, as the entry page says it: a solver run, or a submitted file."""
    solver = html.escape(str(prov.get("solver")))
    commit = html.escape(str(prov.get("commit"))[:10])
    if "submitted" in prov:
        return (f"submitted as {html.escape(str(prov['submitted'].get('file')))}, naming {solver} "
                f"(seed {prov.get('seed')}; validated at commit {commit})")
    return (f"found by {solver} (seed {prov.get('seed')}, limit {prov.get('time_limit')} s, "
            f"commit {commit})")


def entry_page(lib: Library, entry: Entry, out: Path) -> str:
    inst = _instance_file(lib, entry, out)
    sol = _copy(lib, entry.best.get("file"), out)
    prov = entry.best.get("provenance") or {}
    rows = []
    for b in sorted(entry.bounds, key=lambda b: -b["value"]):
        cert = _copy(lib, b.get("certificate"), out)
        link = (f'<a href="../{_href(cert)}">certificate</a>' if cert else "recomputed from the instance")
        rows.append(f"<tr><td>{html.escape(b['kind'])}{' (' + html.escape(b['label']) + ')' if b.get('label') else ''}"
                    f"</td><td>{figure(entry, b['value'])}</td><td>"
                    f"{'yes' if BOUND_KINDS[b['kind']][0] else 'no (not cheaply checkable)'}</td>"
                    f"<td>{link}</td><td>{html.escape(str((b.get('provenance') or {}).get('solver')))}</td></tr>")
    unit = "bytes" if entry.problem == "packing" else "µs"
    body = (f"<p><a href=\"../index.html\">{html.escape(lib.name)}</a></p>"
            f"<h1>{html.escape(entry.id)}</h1>"
            f"<p>{html.escape(entry.split)} split; {entry.ops} {'buffers' if entry.problem == 'packing' else 'ops'}; "
            f"status <b>{html.escape(entry.status)}</b> (certified gap {percent(entry.certified_gap)}%)</p>"
            f"<ul><li><a href=\"../{_href(inst)}\">instance file</a></li>"
            f"<li><a href=\"../{_href(sol)}\">best known solution</a>: {figure(entry, entry.best['objective'])} "
            f"{unit}, {_found_by(prov)}</li>"
            f"<li>default ({html.escape(entry.default['solver'])}): {figure(entry, entry.default['objective'])} {unit}</li></ul>"
            f"<h2>Memory over time (best known)</h2>{picture(lib, entry)}"
            f"<h2>Bounds</h2><table><thead><tr><th>kind</th><th>value ({unit})</th><th>checkable</th>"
            f"<th>certificate</th><th>by</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return _page(entry.id, body)


def write_site(lib: Library, out: str | Path) -> Path:
    """Write the site into `out` (created); returns the index page."""
    out = Path(out)
    (out / "entries").mkdir(parents=True, exist_ok=True)
    heads = ["entry", "problem", "split", "ops", "default", "best known", "bound", "gap %",
             "certified gap %", "status"]
    rows = []
    for e in lib.entries:
        (out / page_name(e)).write_text(entry_page(lib, e, out), encoding="utf-8")
        cells = [f'<td data-value="{html.escape(e.id)}"><a href="{_href(page_name(e))}">{html.escape(e.id)}</a></td>',
                 f"<td>{e.problem}</td>", f"<td>{e.split}</td>", f"<td>{e.ops}</td>",
                 f'<td data-value="{_num(e.default["objective"])}">{figure(e, e.default["objective"])}</td>',
                 f'<td data-value="{_num(e.best["objective"])}">{figure(e, e.best["objective"])}</td>',
                 f'<td data-value="{_num(e.bound)}">{figure(e, e.bound)}</td>',
                 f'<td data-value="{_num(None if e.gap is None else 100 * e.gap)}">{percent(e.gap)}</td>',
                 f'<td data-value="{_num(None if e.certified_gap is None else 100 * e.certified_gap)}">'
                 f'{percent(e.certified_gap)}</td>', f"<td>{html.escape(e.status)}</td>"]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f'<th onclick="sortTable({i})">{h}</th>' for i, h in enumerate(heads))
    dropped = "".join(f"<li>{html.escape(d['id'])}: {html.escape(d['reason'])}</li>" for d in lib.dropped)
    body = (f"<h1>{html.escape(lib.name)}</h1><p>{html.escape(lib.manifest.get('description', ''))}</p>"
            "<p>Latencies in µs, packing heights in bytes. Click a column header to sort. "
            "<a href=\"files/library.json\">manifest</a></p>"
            f"<table id=\"entries\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + (f"<h2>Left out</h2><ul>{dropped}</ul>" if dropped else "") + SORT_SCRIPT)
    (out / "files").mkdir(exist_ok=True)
    shutil.copyfile(lib.path(MANIFEST), out / "files" / MANIFEST)
    index = out / "index.html"
    index.write_text(_page(lib.name, body), encoding="utf-8")
    return index
