"""A sweep cell's row is its run's record (CellResult.from_record): the outcome, verdict, answer and
usage the run recorded, not a second count of them; a record that kept no usage per role is counted
from its calls."""

from __future__ import annotations

import asyncio

from physlab.api import solve_async
from physlab.bench.store import CellResult
from physlab.run.summary import read_calls


def test_a_cells_row_is_what_its_run_recorded(tmp_path):
    ws = tmp_path / "one"
    record = asyncio.run(solve_async("examples/quantum_error_correction_main", "oneshot",
                                     "scripted:oneshot-qec-correct", workspace=ws))
    calls = read_calls(ws)
    row = CellResult.from_record(record, workspace=str(ws), calls=calls)
    assert (row.status, row.verdict, row.answer_code) == (record.status, "correct", record.answer_code)
    assert row.usage() == record.usage and row.usage_by_role == record.usage_by_role
    assert row.wall_s == record.wall_s and row.calls == calls and row.workspace == str(ws)

    bare = record.model_copy(update={"per_role": {}})   # a record without usage per role: from the calls
    counted = CellResult.from_record(bare, workspace=str(ws), calls=calls)
    assert counted.usage().calls == len(calls) and counted.usage().input_tokens == record.usage.input_tokens
