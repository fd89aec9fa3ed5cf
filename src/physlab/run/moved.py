"""A run directory made on another machine and moved here (a Ray sweep's cell: run in its node's
scratch directory, brought back into the driver's ``--workspace-root``): its record is rewritten by
the code that writes records, to name where the run is now, so that metrics.json, `runs show` and
the dashboard say what is true here.

A record's seal is made with the secret of the machine that wrote it (:mod:`physlab.run.seal`),
which no other machine can check: the machine that ran the run says which of its records still
carried its seal when they left (``sealed_records``), and those are sealed here as written here;
any other is left as it came, untrusted like a run received from elsewhere.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from physlab.run.files import METRICS, OPTIONS, read_bytes
from physlab.run.record import read_record, read_start, write_record, write_start
from physlab.run.seal import is_sealed


def sealed_records(ws: Path) -> list[str]:
    """The record files of ``ws`` (run.json, metrics.json) that carry this machine's seal."""
    return [name for name in (OPTIONS, METRICS) if is_sealed(read_bytes(Path(ws) / name))]


def moved_here(ws: Path, vouched: Collection[str]) -> None:
    """``ws`` was moved here from the machine that ran it, which vouched for the records named in
    ``vouched``: those are written again (metrics.json naming ``ws`` as the run's workspace), sealed
    here; a run kept in git takes the change into its end commit, so its tree stays clean."""
    ws = Path(ws)
    if METRICS in vouched and (record := read_record(ws)) is not None:
        if "workspace" in record.details:
            record.details = {**record.details, "workspace": str(ws)}
        write_record(ws, record)
    if OPTIONS in vouched and (start := read_start(ws)) is not None:
        write_start(ws, start)  # (nothing in it names the directory: sealed here, as it was there)
    _amend_end_commit(ws)


def _amend_end_commit(ws: Path) -> None:
    """The rewritten record into the run's end commit (the lab's; one that ended without it: left)."""
    if not (ws / ".git").is_dir():
        return
    from physlab.run.git import ENDED, RunRepo

    repo = RunRepo(ws)
    history = repo.history()
    if history and history[0][1].startswith(ENDED):
        try:
            repo.commit_outcome(history[0][1])  # amends the end commit, keeping its subject
        except RuntimeError:  # git failed: the files are right all the same
            pass
