"""A run directory kept in git (the lab's: one commit per iteration): the git plumbing every such
run shares, and the end-of-run commit that leaves a finished run's tree clean.

The lab's own part -- its state committed each iteration, loaded back, rewound -- is
:class:`physlab.lab.workspace.RunWorkspace`, built on :class:`RunRepo`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from physlab.errors import UserError
from physlab.run.files import PROBLEM
from physlab.run.lock import LOCK, open_by

_GIT_ID = ["-c", "user.name=PhysLab lab", "-c", "user.email=lab@physlab.invalid", "-c", "commit.gpgsign=false"]
ENDED = "run ended"  # the subject of the commit a run's end adds (its answer and metrics.json)
CACHE = ".cache"  # the run's cache directory (downloads, indexes): kept out of its history


class RunRepo:
    """A run directory as a git repository."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def git(self, *args: str, check: bool = True) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        proc = subprocess.run(["git", *_GIT_ID, *args], cwd=self.root, capture_output=True, text=True, env=env)
        if check and proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed in {self.root}: {proc.stderr.strip()}")
        return proc.stdout

    @property
    def is_repo(self) -> bool:
        return (self.root / ".git").exists()

    def init(self, problem_md: str | None = None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.is_repo:
            self.git("init", "-q", "-b", "main")
            (self.root / ".gitignore").write_text("*.tmp\n", encoding="utf-8")
        lock = self.root / ".git" / "index.lock"
        if lock.exists():
            holders = open_by(lock)
            if holders:
                raise UserError(f"git is working in this run (process {holders[0]} holds .git/index.lock); "
                                "wait for it to finish", path=self.root)
            lock.unlink(missing_ok=True)  # left by a process killed during a commit
        if problem_md is not None and not (self.root / PROBLEM).exists():
            (self.root / PROBLEM).write_text(problem_md, encoding="utf-8")

    def stage(self) -> None:
        """Everything in the run directory but its lock, which says who runs it now, not what it did,
        and its cache (``CACHE``: downloaded papers, the corpus index): git ignores them (the
        repository's own exclude file, so runs made before know it too)."""
        exclude = self.root / ".git" / "info" / "exclude"
        known = exclude.read_text(encoding="utf-8", errors="replace") if exclude.is_file() else ""
        missing = [f"/{name}" for name in (LOCK, CACHE) if f"/{name}" not in known.split()]
        if missing:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            exclude.write_text(known + ("" if known.endswith("\n") or not known else "\n") + "\n".join(missing) + "\n",
                               encoding="utf-8")
        self.git("add", "-A")

    def commit_outcome(self, message: str) -> bool:
        """Commit what the run wrote after its last iteration (the final ANSWER.md, metrics.json),
        so that a finished run's tree is clean. A session that added no iteration (a resume of a
        finished run) replaces the previous end commit instead of stacking another one. False when
        there was nothing new to commit."""
        if not self.is_repo:
            return False
        self.stage()
        if not self.git("status", "--porcelain").strip():
            return False
        history = self.history()
        again = ["--amend"] if history and history[0][1].startswith(ENDED) else []
        self.git("commit", "-q", "--no-verify", *again, "-m", message)
        return True

    def history(self) -> list[tuple[str, str]]:
        """(sha, subject) of every commit, newest first."""
        if not self.is_repo:
            return []
        out = self.git("log", "--format=%H%x09%s", check=False)
        pairs = (line.partition("\t") for line in out.splitlines() if "\t" in line)
        return [(sha, subject) for sha, _, subject in pairs]
