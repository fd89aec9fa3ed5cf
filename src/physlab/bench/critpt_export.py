"""CritPt batches from a results database: one batch per repeat of one strategy x model x config
group, checked against what CritPt's grading server accepts, written as CritPt's batch file or its
per-problem directory layout (see :mod:`physlab.bench.critpt_format`).

CritPt's protocol is five runs of the 70 challenges, each graded as its own batch; so a group swept
with ``--repeats 5`` gives five batches, never one batch mixing answers from several runs.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from physlab.bench.critpt_format import (
    BATCH_METADATA_FILE,
    IdCheck,
    Submission,
    batch_dict,
    check_ids,
    fence,
    model_label as default_label,
    natural_key,
    parser_problem,
)
from physlab.bench.store import ResultsStore, cell_config
from physlab.errors import UserError

# A CritPt problem id as a file name of the per-problem layout (``Challenge_7_sub_1``).
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,200}")


class Group(BaseModel):
    strategy: str
    model: str
    config: str


class Batch(BaseModel):
    """One repeat's batch: its entries (with the cell each came from), its metadata, the id check,
    and what CritPt's code parser would object to, per problem id."""

    group: Group
    repeat: int
    submissions: list[Submission]
    cell_keys: list[str]
    metadata: dict[str, Any]
    check: IdCheck
    unfinished: int = 0
    code_problems: dict[str, str] = {}
    no_messages: int = 0

    def file_dict(self) -> dict[str, Any]:
        return batch_dict(self.submissions, self.metadata)

    def refusal(self) -> str:
        """One line saying why CritPt's server would refuse this batch ('' when it would not)."""
        if self.check.complete:
            return ""
        n = self.unfinished
        hint = f" ({n} cell{'s' * (n != 1)} of this repeat not finished: run the sweep again)" if n else ""
        return f"repeat {self.repeat}: CritPt's server would refuse this batch: {self.check.describe()}{hint}"


def select_group(store: ResultsStore, *, strategy: str | None, model: str | None,
                 config: str | None) -> tuple[Group, list[dict[str, Any]]]:
    """The one strategy x model x config group the flags name, and all its cells (any state)."""
    cells = [c for c in store.cells() if (not strategy or c["strategy"] == strategy)
             and (not model or c["model"] == model) and (config is None or cell_config(c) == config)]
    done = [c for c in cells if c["state"] == "done"]
    if not done:
        raise UserError("no finished cells match", field="--strategy/--model" + ("/--config" if config else ""))
    groups = sorted({(c["strategy"], c["model"]) for c in done})
    if len(groups) > 1:
        raise UserError(f"the database holds {len(groups)} strategy x model groups "
                        f"({', '.join('/'.join(g) for g in groups[:4])}); choose one with --strategy and --model",
                        field="--strategy/--model")
    configs = sorted({cell_config(c) for c in done})
    if len(configs) > 1:
        raise UserError(f"these cells were run at {len(configs)} budgets/parameter sets ({', '.join(configs)}); "
                        f"choose one with --config", field="--config")
    (strat, mod), conf = groups[0], configs[0]
    return Group(strategy=strat, model=mod, config=conf), [
        c for c in cells if (c["strategy"], c["model"], cell_config(c)) == (strat, mod, conf)]


def build_batches(store: ResultsStore, *, strategy: str | None = None, model: str | None = None,
                  repeat: int | None = None, config: str | None = None, label: str | None = None,
                  messages: bool = False) -> list[Batch]:
    """One batch per repeat of the chosen group (only ``repeat`` when given), in repeat order."""
    group, cells = select_group(store, strategy=strategy, model=model, config=config)
    repeats = sorted({c["repeat"] for c in cells if c["state"] == "done"})
    if repeat is not None:
        if repeat not in {c["repeat"] for c in cells}:
            raise UserError(f"this group has no repeat {repeat} (repeats: {', '.join(map(str, repeats))})",
                            field="--repeat")
        repeats = [repeat]
    known_subs = _known_sub_problems(store)
    return [_batch(store, group, r, [c for c in cells if c["repeat"] == r], known_subs,
                   label or default_label(group.model), messages) for r in repeats]


def _batch(store: ResultsStore, group: Group, repeat: int, cells: list[dict[str, Any]],
           known_subs: list[str], label: str, messages: bool) -> Batch:
    done = [c for c in cells if c["state"] == "done"]
    subs, keys, problems = [], [], {}
    no_messages = 0
    for c in sorted(done, key=lambda c: (natural_key(c["problem_id"]), c["suite"])):
        code = fence(c["answer_code"] or "")
        convo = conversation(Path(c["workspace"])) if messages and c["workspace"] else None
        no_messages += messages and convo is None
        subs.append(Submission(
            problem_id=c["problem_id"], generated_code=code, model=label,
            timestamp=_iso(c["finished_at"]),
            generation_config={"scaffold": "physlab", "strategy": group.strategy, "model": group.model,
                               "config": group.config, "repeat": repeat, "physlab_cell": c["key"]},
            messages=convo))
        keys.append(c["key"])
        if problem := parser_problem(code):
            problems[c["problem_id"]] = problem
    metadata = {
        "tool": "physlab", "model": label, "timestamp": dt.datetime.now(dt.UTC).isoformat(),
        "generation_config": {"strategy": group.strategy, "model": group.model, "config": group.config},
        "repeat": repeat, "num_submissions": len(subs), "problem_ids": [s.problem_id for s in subs],
    }
    return Batch(group=group, repeat=repeat, submissions=subs, cell_keys=keys, metadata=metadata,
                 check=check_ids((s.problem_id for s in subs), known_subs), unfinished=len(cells) - len(done),
                 code_problems=problems, no_messages=no_messages)


def _known_sub_problems(store: ResultsStore) -> list[str]:
    """The sub-problem ids of CritPt challenges the database's problems hold."""
    return [pid for pid, public in store.problems_public().items()
            if (public.get("extra") or {}).get("problem_type") == "sub"]


def _iso(ts: float | None) -> str:
    """When the answer was made (the cell's end), ISO 8601 with its time zone."""
    when = dt.datetime.fromtimestamp(ts, dt.UTC) if ts else dt.datetime.now(dt.UTC)
    return when.isoformat()


# -- the conversation -----------------------------------------------------------------------------


def conversation(workspace: Path) -> list[dict[str, Any]] | None:
    """Every model request of the cell's run as CritPt's ``messages`` (``role``/``content`` dicts, in
    order, plus which PhysLab role spoke), from its calls.jsonl; None when the run left none. A
    role's history that a later request repeats is written once."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest

    from physlab.run.summary import read_calls  # the one reader of a run's calls

    try:
        records = read_calls(workspace, bodies=True)
    except (OSError, ValueError, UserError):
        return None
    out: list[dict[str, Any]] = []
    seen: dict[str, list] = {}
    for rec in records:
        raw = rec.request.get("messages") if isinstance(rec.request, dict) else None
        if not isinstance(raw, list):
            continue
        before = seen.get(rec.role, [])
        new = raw[len(before):] if raw[:len(before)] == before else raw
        turn = new + ([rec.response] if rec.response is not None else [])
        seen[rec.role] = raw + ([rec.response] if rec.response is not None else [])
        try:
            msgs = ModelMessagesTypeAdapter.validate_python(turn)
        except ValueError:
            continue
        for msg in msgs:
            if isinstance(msg, ModelRequest) and msg.instructions:
                out.append({"role": "system", "content": msg.instructions, "physlab_role": rec.role})
            out.extend({**m, "physlab_role": rec.role} for m in _parts(msg))
    return out or None


def _parts(msg: Any) -> list[dict[str, Any]]:
    from pydantic_ai import messages as m

    out = []
    for part in msg.parts:
        if isinstance(part, m.SystemPromptPart):
            out.append({"role": "system", "content": part.content})
        elif isinstance(part, m.UserPromptPart):
            content = part.content if isinstance(part.content, str) else "\n".join(
                c if isinstance(c, str) else f"[{type(c).__name__}]" for c in part.content)
            out.append({"role": "user", "content": content})
        elif isinstance(part, m.ToolReturnPart):
            out.append({"role": "tool", "content": part.model_response_str(), "tool": part.tool_name})
        elif isinstance(part, m.RetryPromptPart):
            out.append({"role": "user", "content": part.model_response()})
        elif isinstance(part, m.TextPart):
            out.append({"role": "assistant", "content": part.content})
        elif isinstance(part, m.ThinkingPart):
            out.append({"role": "assistant", "content": part.content, "type": "reasoning"})
        elif isinstance(part, m.ToolCallPart):
            out.append({"role": "assistant", "content": part.args_as_json_str(), "tool_call": part.tool_name})
    return out


# -- writing ---------------------------------------------------------------------------------------


def repeat_file(out: Path, repeat: int, several: bool) -> Path:
    """The batch file of one repeat: ``--out`` itself for a single batch, ``<stem>.r<N><suffix>``
    beside it when there is one per repeat."""
    return out.with_name(f"{out.stem}.r{repeat}{out.suffix}") if several else out


def write_file(batch: Batch, path: Path) -> None:
    path.write_text(json.dumps(batch.file_dict(), indent=2, ensure_ascii=False), encoding="utf-8")


def write_directory(batch: Batch, root: Path) -> Path:
    """``root/<repeat>/<problem_id>.json`` per entry and ``batch_metadata.json`` beside them (the
    layout CritPt's generation writes per epoch and its loaders read). A folder of an earlier
    PhysLab export is replaced whole, so no stale entry stays for CritPt's loader to pick up;
    anything else there is left alone and refused."""
    for sub, key in zip(batch.submissions, batch.cell_keys, strict=True):
        if not _FILE_NAME.fullmatch(sub.problem_id):  # a database's ids are data: never a path
            raise UserError(f"the database's cell {key!r} has problem id {sub.problem_id!r}, which is not a "
                            "plain file name; nothing written", path=root, field="--dir")
    target = root / str(batch.repeat)
    if target.exists():
        meta = target / BATCH_METADATA_FILE
        try:
            ours = json.loads(meta.read_text(encoding="utf-8")).get("tool") == "physlab"
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours and any(target.iterdir()):
            raise UserError("holds files that are not a PhysLab CritPt export; choose another --dir",
                            path=target, field="--dir")
    staging = root / f".{batch.repeat}.writing"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for sub in batch.submissions:
        (staging / f"{sub.problem_id}.json").write_text(
            json.dumps(sub.model_dump(), indent=2, ensure_ascii=False), encoding="utf-8")
    (staging / BATCH_METADATA_FILE).write_text(json.dumps(batch.metadata, indent=2, ensure_ascii=False),
                                               encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return target
