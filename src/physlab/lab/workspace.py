"""The run directory as a git repository: one commit per iteration, state.json plus readable
Markdown, and resume from the last commit (or from any earlier iteration).

Crash safety: state.json is written to a temporary file and renamed, then committed. After a
``kill -9`` the last commit is the truth: ``load`` reads state.json from HEAD, so a half-finished
iteration is simply redone. Other files (calls.jsonl, inbox.jsonl) are append-only and never
rolled back, so nothing already spent or said is lost; the next commit picks them up.

One engine per run: the process running a run holds an exclusive lock on ``.physlab.lock`` in
its directory for the run's lifetime (:func:`lock_run`); a second one is refused in one line.
The lock is an flock on an open file description, so the kernel drops it when its holder dies,
and a process can hand it to a child it starts (the dashboard's resume) without a gap.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import subprocess
from pathlib import Path

from physlab.errors import UserError
from physlab.lab.state.models import ResearchState
from physlab.lab.state.render import render_log, render_state
from physlab.runfiles import write_atomic  # errors name the file (a full disk says where)

STATE = "state.json"
LOCK = ".physlab.lock"
LOCK_FD_ENV = "PHYSLAB_RUN_LOCK_FD"  # a lock descriptor handed down by the process that started us
_GIT_ID = ["-c", "user.name=PhysLab lab", "-c", "user.email=lab@physlab.invalid", "-c", "commit.gpgsign=false"]
_ITER = re.compile(r"^iteration (\d+)\b")
ENDED = "run ended"  # the subject of the commit a run's end adds (its answer and metrics.json)


class RunWorkspace:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # ------------------------------------------------------------------ git plumbing
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
        if problem_md is not None and not (self.root / "PROBLEM.md").exists():
            (self.root / "PROBLEM.md").write_text(problem_md, encoding="utf-8")

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

    def stage(self) -> None:
        """Everything in the run directory but its lock, which says who runs it now, not what it did:
        git ignores it (the repository's own exclude file, so runs made before know it too)."""
        exclude = self.root / ".git" / "info" / "exclude"
        known = exclude.read_text(encoding="utf-8", errors="replace") if exclude.is_file() else ""
        if f"/{LOCK}" not in known.split():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            exclude.write_text(known + ("" if known.endswith("\n") or not known else "\n") + f"/{LOCK}\n",
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

    # ------------------------------------------------------------------ loading
    def history(self) -> list[tuple[str, str]]:
        if not self.is_repo:
            return []
        out = self.git("log", "--format=%H%x09%s", check=False)
        return [tuple(line.split("\t", 1)) for line in out.splitlines() if "\t" in line]  # type: ignore[misc]

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


def read_json(path: Path) -> dict:
    """A run's JSON object file (metrics.json, state.json); {} when missing, damaged or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return {}
    return data if isinstance(data, dict) else {}


def open_by(path: Path) -> list[int]:
    """Processes that have ``path`` open (Linux: their /proc/PID/fd links); [] where unknown."""
    target = os.path.realpath(path)
    found = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    found.append(int(pid))
                    break
            except OSError:
                continue
    return found


class RunLock:
    """The exclusive lock on one run directory (see :func:`lock_run`)."""

    def __init__(self, root: Path, fd: int) -> None:
        self.root, self.fd = root, fd

    def _write_holder(self, pid: int) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{pid}\n".encode(), 0)

    def hand_over(self, pid: int) -> None:
        """A child started with this descriptor (``pass_fds`` and ``LOCK_FD_ENV``) holds the lock
        now: name it as the holder and close our copy (the lock stays with the child's)."""
        self._write_holder(pid)
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def release(self) -> None:
        if self.fd >= 0:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            self.close()

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _inherited(path: Path) -> int | None:
    """The lock descriptor our parent handed us for ``path``, if it did."""
    raw = os.environ.get(LOCK_FD_ENV, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        mine, theirs = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        return None
    os.environ.pop(LOCK_FD_ENV, None)
    os.set_inheritable(fd, False)
    return fd


def lock_run(root: str | Path) -> RunLock:
    """Take the run directory's lock, or refuse in one line naming the process that has it."""
    root = Path(root)
    path = root / LOCK
    fd = _inherited(path)
    if fd is None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise UserError(f"cannot lock the run directory ({exc.strerror})", path=path) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UserError("cannot lock the run directory (the lock is not a regular file)", path=path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        pid = lock_holder(root)
        who = f"another physlab process (pid {pid})" if pid else "another physlab process"
        raise UserError(f"{who} is already running or resuming this run; wait for it to end, or stop it "
                        f"with `physlab runs stop {root}`", path=root) from None
    lock = RunLock(root, fd)
    lock._write_holder(os.getpid())
    return lock


def lock_holder(root: str | Path) -> int | None:
    """The pid that holds the run's lock, as the lock file names it, when that process is alive
    (for display; taking the lock is the only real test)."""
    try:
        fd = os.open(Path(root) / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 32).decode("ascii", "replace").strip() if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    finally:
        os.close(fd)
    if not raw.isdigit():
        return None
    pid = int(raw)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid
