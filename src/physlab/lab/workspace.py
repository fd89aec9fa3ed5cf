"""The lab's run directory: one commit per iteration, state.json plus readable Markdown, and resume
from the last commit (or from any earlier iteration).

Crash safety: state.json is written to a temporary file and renamed, then committed. After a
``kill -9`` the last commit is the truth: ``load`` reads state.json from HEAD, so a half-finished
iteration is simply redone. Other files (calls.jsonl, inbox.jsonl) are append-only and never
rolled back, so nothing already spent or said is lost; the next commit picks them up. The git
plumbing and the run's lock are the run package's (:mod:`physlab.run.git`, :mod:`physlab.run.lock`).
"""

from __future__ import annotations

import re
from pathlib import Path

from physlab.errors import UserError
from physlab.lab.state.models import ResearchState
from physlab.lab.state.render import render_log, render_state
from physlab.run.files import STATE, write_atomic  # errors name the file (a full disk says where)
from physlab.run.git import RunRepo

_ITER = re.compile(r"^iteration (\d+)\b")


class RunWorkspace(RunRepo):
    """A lab run's directory: its research state committed once per iteration."""

    # ------------------------------------------------------------------ saving
    def write_state(self, state: ResearchState) -> None:
        write_atomic(self.root / STATE, state.model_dump_json(indent=1))
        write_atomic(self.root / "RESEARCH_STATE.md", render_state(state))
        write_atomic(self.root / "LOG.md", render_log(state))

    def commit(self, state: ResearchState, message: str) -> str:
        self.write_state(state)
        self.stage()
        self.git("commit", "-q", "--allow-empty", "--no-verify", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    # ------------------------------------------------------------------ loading
    def _state_at(self, rev: str) -> ResearchState:
        try:
            raw = self.git("show", f"{rev}:{STATE}")
        except RuntimeError:
            raise UserError(f"the commit {rev} holds no {STATE}", path=self.root) from None
        return self._parse(raw, f"{STATE} at {rev}")

    def _parse(self, raw: str | bytes, what: str) -> ResearchState:
        """A damaged state is bad input (one line, exit 2), never a crash that overwrites metrics.json."""
        try:
            return ResearchState.model_validate_json(raw)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise UserError(f"{what} cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]})",
                            path=self.root) from None

    def load(self) -> ResearchState | None:
        """The state of the last commit (None when the run has none)."""
        if not self.is_repo or not self.history():
            if (self.root / STATE).is_file():
                return self._parse((self.root / STATE).read_bytes(), STATE)
            return None
        return self._state_at("HEAD")

    def load_iteration(self, n: int) -> ResearchState:
        """The state as committed at the end of iteration ``n`` (0 = after survey and plan)."""
        for sha, subject in self.history():        # newest first
            m = _ITER.match(subject)
            if m and int(m.group(1)) == n:
                return self._state_at(sha)
        raise UserError(f"no commit for iteration {n} (see `physlab runs show`)", path=self.root, field="iteration")

    def rewind(self, n: int) -> ResearchState:
        """Make iteration ``n``'s state current (a new commit; later history stays in git)."""
        state = self.load_iteration(n).model_copy(update={"status": "running", "stop_reason": "",
                                                          "completion_requested": False})
        current = self.load()
        # Keep the inbox bookkeeping of the newer state: messages already taken in stay taken in.
        if current is not None:
            state = state.model_copy(update={"inbox_consumed": list(current.inbox_consumed)})
        for name in ("ANSWER.md", "answer.py"):
            (self.root / name).unlink(missing_ok=True)
        self.commit(state, f"rewind to iteration {n} (later iterations stay in the git history)")
        return state


def split_resume_target(target: str | Path) -> tuple[Path, int | None]:
    """``DIR@3`` -> (DIR, 3); ``DIR`` -> (DIR, None)."""
    text = str(target)
    m = re.match(r"^(.*)@(\d+)$", text)
    if m and not Path(text).exists():
        return Path(m.group(1)), int(m.group(2))
    return Path(text), None
