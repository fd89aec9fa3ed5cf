"""Sandbox front door: run untrusted Python, isolated, limited, fast.

``Sandbox(backend="auto"|"bwrap"|"rlimit")``. Every run goes to a warm worker (a "zygote" that
has imported sympy/numpy/scipy/mpmath/matplotlib, or only what ``preload`` names: a one-run
command's workers import what its run uses); for each run the worker forks a one-run manager
*before* the request exists, and only that manager reads it (see ``_zygote.py``):

* bwrap backend — the zygote lives inside bubblewrap (no network, own PID/IPC/UTS namespaces,
  read-only /usr, /dev and Python installation, a private tmpfs, scrubbed environment, no $HOME,
  no caller cwd, no /work, dies with us); each run additionally gets its own user + mount + PID +
  IPC namespace with a fresh size-limited tmpfs as /tmp and /dev/shm, so runs cannot see each
  other and nothing a run starts or leaves outlives it.
* rlimit backend — the weaker fallback (announced once; refused for root unless chosen
  explicitly): rlimits, scrubbed environment, private work dir, an unprivileged uid of its own
  when we are root; where the kernel allows, each run's own mount, PID, IPC and network
  namespaces (its own /proc and /dev/shm, no network), else the run's process tree killed after
  it and no network isolation. No filesystem isolation.

Trusted code (the grader's comparisons, which hold the reference answer) runs on ``sandbox.trusted``:
a pool of its own, so a worker that has served a comparison never serves model-written code.
``launch.py`` builds the bwrap command line; ``docs/sandbox.md`` tabulates what each backend isolates.
FORM, Cadabra2, Maxima and the Wolfram Language run here too, as ordinary runs whose code is a small
driver (``physlab.tools.cas``).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import os
import threading
import weakref

from physlab.errors import UserError
from physlab.sandbox import launch, preload as preloads
from physlab.sandbox._zygote_common import bad_name
from physlab.sandbox.pool import Pool, _close_all, warm_pools
from physlab.sandbox.types import SandboxLimits, SandboxResult

atexit.register(_close_all)


def _check_name(name: str, what: str) -> None:
    why = bad_name(name)
    if why:
        raise UserError(f"sandbox {what} {name!r}: {why}")


class Sandbox:
    """Runs untrusted Python on warm workers. ``trusted`` is a second sandbox with workers of its
    own for trusted code that holds secrets (the grader's comparisons with the reference)."""

    def __init__(self, backend: str = "auto", *, workers: int | None = None, preload: tuple[str, ...] | None = None,
                 _model: Sandbox | None = None) -> None:
        self.requested = backend
        self.backend = launch.resolve_backend(backend) if _model is None else _model.backend
        self.workers = workers or os.cpu_count() or 2
        # what its workers import before their first run (``physlab.sandbox.preload``; None: the whole stack)
        self.preload = preloads.FULL if preload is None else preloads.check(preload)
        self._pool = Pool(self.backend, self.workers, self.preload)
        self._trusted: Sandbox | None = self if _model is not None else None
        self._trusted_lock = threading.Lock()
        # a Sandbox dropped without close() must not leave its warm workers running
        weakref.finalize(self, self._pool.close)

    @property
    def trusted(self) -> Sandbox:
        """The sandbox for trusted code, made on first use: same backend, size and preload, its own pool."""
        with self._trusted_lock:
            if self._trusted is None:
                self._trusted = Sandbox(self.requested, workers=self.workers, preload=self.preload, _model=self)
            return self._trusted

    def _request(self, code: str, limits: SandboxLimits, files, collect, stdin) -> dict:
        for name in files or {}:
            _check_name(name, "input file")
        return {
            "code": code,
            "limits": limits.model_dump(),
            "files": {k: base64.b64encode(v).decode() for k, v in (files or {}).items()},
            "collect": list(collect or []),
            "stdin": base64.b64encode(stdin).decode() if stdin else None,
        }

    def _result(self, resp: dict, limits: SandboxLimits) -> SandboxResult:
        dec = lambda s: base64.b64decode(s).decode("utf-8", errors="replace") if s else ""  # noqa: E731
        return SandboxResult(
            exit_code=resp.get("exit_code"),
            stdout=dec(resp.get("stdout")),
            stderr=dec(resp.get("stderr")) or resp.get("error", ""),
            timed_out=bool(resp.get("timed_out")),
            duration_s=float(resp.get("duration_s") or 0.0),
            truncated=bool(resp.get("truncated")),
            files={k: base64.b64decode(v) for k, v in (resp.get("files") or {}).items()},
            backend=self.backend,
            files_truncated=bool(resp.get("files_truncated")),
            limit_hit=resp.get("limit_hit") or ("timeout" if resp.get("timed_out") else None),
            signal=resp.get("signal"),
            error=resp.get("error", ""),
            isolated_run=bool(resp.get("namespaced")),
        )

    def run_sync(
        self,
        code: str,
        *,
        limits: SandboxLimits | None = None,
        files: dict[str, bytes] | None = None,
        collect: list[str] | None = None,
        stdin: bytes | None = None,
    ) -> SandboxResult:
        """Blocking run. Safe from any thread, and from code inside a running event loop (it
        blocks that loop for the run's duration; prefer ``await run`` there)."""
        limits = limits or SandboxLimits()
        req = self._request(code, limits, files, collect, stdin)
        return self._result(self._pool.run(req, limits.timeout_s), limits)

    async def run(
        self,
        code: str,
        *,
        limits: SandboxLimits | None = None,
        files: dict[str, bytes] | None = None,
        collect: list[str] | None = None,
        stdin: bytes | None = None,
    ) -> SandboxResult:
        # A dedicated thread per run (not the loop's default executor, which a busy caller may
        # have filled); the run itself is bounded by its timeout, even if this task is cancelled.
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[SandboxResult] = loop.create_future()

        def work() -> None:
            res, err = None, None
            try:
                res = self.run_sync(code, limits=limits, files=files, collect=collect, stdin=stdin)
            except BaseException as exc:  # noqa: BLE001 - hand it to the awaiting task
                err = exc
            try:
                loop.call_soon_threadsafe(_set, fut, res, err)
            except RuntimeError:  # the caller's loop is gone (cancelled and closed): drop it
                pass

        threading.Thread(target=work, name="physlab-sandbox-run", daemon=True).start()
        return await fut

    def warm(self, n: int | None = None, *, trusted: bool = False) -> None:
        """Start ``n`` (default: all) workers now instead of on first use; with ``trusted``, as
        many for the trusted pool too, side by side (a grade needs both)."""
        warm_pools([self._pool] + ([self.trusted._pool] if trusted and self.trusted is not self else []), n)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        self._pool.close()
        trusted = self._trusted
        if trusted is not None and trusted is not self:
            trusted.close()


def _set(fut: asyncio.Future, res, exc) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(res)


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process-wide sandbox (backend from $PHYSLAB_SANDBOX_BACKEND or auto)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Sandbox()
        return _default
