"""Commands of the benchmark harness: `bench`, `report`, `validate-results` and
`relocate-runs`."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from memplace.cli.values import JOBS, microseconds


class Progress:
    """A tqdm bar on a terminal; otherwise one plain line per finished run. The time
    left is `TimeLeft`'s estimate, counted from `start()` (the kernels loaded)."""

    def __init__(self, tasks: list, jobs: int, skipped: int):
        from memplace.bench.time_left import TimeLeft
        self.total, self.count, self.failed, self.skipped = len(tasks), 0, 0, skipped
        self.left = TimeLeft(tasks, jobs)
        self.bar = None

    def start(self, kernel_seconds: float) -> None:
        """The kernels are loaded (in `kernel_seconds`): the runs begin."""
        click.echo(f"kernels: ready in {kernel_seconds:.1f} s; running")
        self.left.start()
        if sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=self.total, unit="run", dynamic_ncols=True, file=sys.stderr,
                            desc=f"runs ({self.skipped} already done)" if self.skipped else "runs",
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                       "[{elapsed}{postfix}]")

    def __call__(self, record: dict[str, Any]) -> None:
        self.count += 1
        self.failed += record["status"] not in ("optimal", "feasible")
        self.left.finished(record)
        left = self.left.seconds()
        if self.bar is not None:
            self.bar.set_postfix_str(f"~{left:.0f}s left; {record['solver']} on "
                                     f"{record['instance']}, {self.failed} failed", refresh=False)
            self.bar.update(1)
            return
        what = (microseconds(record['latency']) if record["latency"] is not None
                else (record["error"] or "")[:120])
        click.echo(f"[{self.count}/{self.total} {self.left.elapsed():.0f}s, ~{left:.0f}s left] "
                   f"{record['instance']} {record['solver']} seed={record['seed']} "
                   f"{record['status']} {what} ({record['wall_s']:.1f} s)")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _kernel_notice() -> str:
    """What happens before the first run: the kernels compile (once per install, into the
    cache folder) or load from that cache. Reads only the cache folder: it prints at once."""
    from memplace.model.core import numba_cache
    folder = numba_cache.cache_dir()
    if numba_cache.has_kernels():
        return f"kernels: loading the compiled kernels from the cache in {folder}"
    last = numba_cache.last_compile_seconds()
    took = (f"the last compile here took {last:.0f} s" if last is not None
            else "this takes two to five minutes")
    return (f"kernels: compiling every Numba kernel of memplace before the first run, once, "
            f"in this process (cached in {folder}, where later commands load them); {took}")


@click.command("bench")
@click.argument("plan_name", metavar="[PLAN]", default="quick")
@click.option("--out", type=click.Path(file_okay=False), help="output folder [default: results/<plan>/]")
@click.option("--jobs", type=JOBS, default=None, help="runs at a time (with --dask local: the number of Dask workers) [default: number of cores]")
@click.option("--resume", is_flag=True, help="continue the batch in --out: skip recorded runs")
@click.option("--retry-failed", is_flag=True, help="also redo runs recorded as failed (implies --resume)")
@click.option("--dask", metavar="ADDRESS|local", help="run on a Dask cluster (`local`: a LocalCluster)")
def bench_command(plan_name: str, out: str | None, jobs: int | None, resume: bool,
                  retry_failed: bool, dask: str | None) -> None:
    """Run a benchmark PLAN (a shipped plan name or a TOML file; default: quick),
    appending one record per run to runs.jsonl in the output folder."""
    began = time.perf_counter()
    click.echo(_kernel_notice())  # first: compiling can take minutes before the first run
    from memplace.bench.plan import load_plan
    from memplace.bench.runner import pending, run_batch
    from memplace.bench.store import RunStore
    plan = load_plan(plan_name)
    jobs = jobs or os.cpu_count() or 1
    store = RunStore(out or Path("results") / plan.name)  # plans' results side by side
    batch = pending(plan, store, resume or retry_failed, retry_failed)
    seconds = sum(t.time_limit for t in batch.todo)
    click.echo(f"plan {plan.name}: {plan.runs_breakdown()}; to run now: {len(batch.todo)} "
               f"(recorded: {batch.done}, failed and not retried: {batch.failed_skipped}); "
               f"at most {seconds / jobs / 60:.1f} min of time limits on {jobs} "
               f"{'Dask workers' if dask else 'workers'}; writing {store.path}")
    progress = Progress(batch.todo, jobs, batch.done)
    try:
        records = run_batch(plan, batch, store, jobs, dask, on_record=progress,
                            on_start=progress.start)
    finally:
        progress.close()
    click.echo(f"done: {len(records)} runs in {time.perf_counter() - began:.0f} s, "
               f"{progress.failed} failed; next: memplace report {store.path}")


@click.command("report")
@click.argument("runs", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="output folder [default: the runs file's folder]")
@click.option("--against", type=click.Path(exists=True, dir_okay=False),
              help="a reference runs file: also write table_against (each instance's best "
                   "here against its best there)")
def report_command(runs: str, out: str | None, against: str | None) -> None:
    """Tables (Markdown, LaTeX, CSV) and plots (PNG, SVG) from a runs file."""
    from memplace.bench.report_plots import write_plots
    from memplace.bench.report_tables import against_table, write_tables
    from memplace.bench.results import Results
    from memplace.bench.store import read_runs
    folder = Path(out) if out else Path(runs).parent
    folder.mkdir(parents=True, exist_ok=True)
    results = Results(read_runs(runs), cache_folder=folder)
    written = write_tables(results, folder) + write_plots(results, folder)
    if against:
        table = against_table(results, Results(read_runs(against)))
        written += table.write(folder)
        click.echo(table.caption)
    click.echo(f"{len(results.records)} runs on {len(results.instances)} instances by "
               f"{len(results.solvers)} solvers; wrote {len(written)} files to {folder}")
    for path in written:
        click.echo(f"  {path}")
    for label, n in results.code_versions().items():
        click.echo(f"code: {label}: {n} runs")
    tied = results.tied_instances()
    if tied:
        click.echo(f"note: all solvers tie (the {results.problem.baselines['slowest']} reference "
                   f"aside) on {', '.join(tied)}; nothing there tells them apart")


@click.command("validate-results")
@click.argument("runs", type=click.Path(dir_okay=False))
def validate_results_command(runs: str) -> None:
    """Re-evaluate every stored placement against its instance; exit 1 if any record's
    validity or latency does not hold, 0 if all do."""
    from memplace.bench.replay import recheck
    from memplace.bench.store import read_runs
    records = read_runs(runs)
    checked, findings = recheck(records)
    for finding in findings:
        click.echo(f"does not hold: {finding}")
    skipped = len(records) - checked
    click.echo(f"{checked} placements re-checked ({skipped} failed runs without one): "
               f"{len(findings)} do not hold")
    if findings:
        sys.exit(1)


@click.command("relocate-runs")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
def relocate_runs_command(runs: tuple[str, ...]) -> None:
    """Rewrite the absolute instance paths of runs files written before records stored
    paths relative to the package: a file of this checkout (found by its fingerprint
    when the checkout that ran it is gone) becomes its path relative to the repository's
    root, as new runs record it; nothing else in the file changes. Do not run it while a
    batch writes to the file."""
    from memplace.bench.instance_source import relocate_runs
    for path in runs:
        done = relocate_runs(path)
        click.echo(f"{path}: {done.rewritten} of {done.records} records rewritten; "
                   f"{len(done.left)} absolute paths of no file here kept")
        for source in done.left:
            click.echo(f"  kept: {source}")
