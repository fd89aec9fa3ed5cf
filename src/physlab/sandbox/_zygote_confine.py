"""How a run is confined: its namespaces and mounts, its limits and privileges, and (rlimit backend
without namespaces) the whole-tree kill, the cgroup and the unprivileged uid. Standard library only."""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import time

from _zygote_common import (CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, MS_BIND,
                            MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_RDONLY, MS_REC, MS_REMOUNT,
                            PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, SANDBOX_UID, _libc, _mount, _pids, _prctl,
                            _proc_stat, _reap, _write_file, cfg)

RUN_NAMESPACES = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET  # the rlimit backend's, per run


def _unshare(flags: int) -> None:
    if _libc.unshare(flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"unshare: {os.strerror(e)}")


def _map_user(inside: int, uid: int, gid: int) -> None:
    """In a new user namespace: ``inside`` is the uid and gid PhysLab runs as (uid, gid)."""
    _write_file("/proc/self/setgroups", "deny")
    _write_file("/proc/self/uid_map", f"{inside} {uid} 1\n")
    _write_file("/proc/self/gid_map", f"{inside} {gid} 1\n")


def enter_namespaces(disk_mb: int) -> bool:
    """In M (bwrap backend): new user + mount + PID + IPC namespaces, and for the run a fresh
    size-limited tmpfs as /tmp that also backs /dev/shm (so shared memory counts toward the run's
    disk limit). False if the kernel refuses the namespaces."""
    uid, gid = os.geteuid(), os.getegid()
    _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the uid_map files of a non-dumpable process are not ours
    try:
        _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)
    except OSError:
        return False
    try:
        _map_user(SANDBOX_UID, uid, gid)
        try:
            _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
        except OSError:
            pass
        opts = f"size={disk_mb}m,mode=1777,nr_inodes=100000"
        _mount("tmpfs", cfg.run_root, "tmpfs", MS_NOSUID | MS_NODEV, opts)
        if os.path.isdir("/dev/shm"):
            shm = os.path.join(cfg.run_root, ".dev-shm")
            os.mkdir(shm)
            os.chmod(shm, 0o1777)
            _mount(shm, "/dev/shm", None, MS_BIND, None)
        for staging, target in cfg.rebind:  # an interpreter environment living under /tmp (a venv)
            os.makedirs(target, exist_ok=True)
            _mount(staging, target, None, MS_BIND | MS_REC, None)
            _read_only(target)
    except OSError as exc:
        os.write(2, f"physlab-zygote: namespace setup failed: {exc}\n".encode())
        os._exit(70)
    return True


def enter_run_namespaces(disk_mb: int) -> str:
    """In M (rlimit backend): new mount, PID, IPC and network namespaces for the run (as root
    directly, else inside a new user namespace where the user is itself), and a fresh tmpfs as
    /dev/shm. The run's /proc is mounted by its init (``mount_own_proc``). '' or why not."""
    uid, gid = os.geteuid(), os.getegid()
    user = cfg.run_ns != "root"
    if user:
        _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the uid_map files of a non-dumpable process are not ours
    try:
        _unshare(RUN_NAMESPACES | (CLONE_NEWUSER if user else 0))
        if user:
            _map_user(uid, uid, gid)
        # Not optional: a mount made in a namespace that still shares "/" with the host's would
        # appear on the host (the run's /proc over everyone's).
        _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
        if os.path.isdir("/dev/shm"):
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                   f"size={disk_mb}m,mode=1777,nr_inodes=10000")
    except OSError as exc:
        return f"the run's namespaces could not be made ({exc.strerror or exc})"
    finally:
        _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # as the zygote: the run cannot read M or B
    return ""


def mount_own_proc() -> bool:
    """In B, pid 1 of the run's PID namespace: a /proc that lists the run's processes only. When
    the kernel refuses it, bwrap's runs get an empty /proc (the zygote's hidden at least), and
    False either way."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        return True
    except OSError:
        if cfg.ns:
            try:
                _mount("tmpfs", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
            except OSError:
                pass
        return False


def probe_run_namespaces() -> str | None:
    """Can the rlimit backend's runs have their namespaces here? The whole setup of one run (M's
    namespaces, B's /proc), tried in a child: "root" or "user" (how it works), or None."""
    mode = "root" if os.geteuid() == 0 else "user"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            cfg.run_ns = mode
            if not enter_run_namespaces(1):
                init = os.fork()
                if init == 0:
                    ok = False
                    try:
                        ok = mount_own_proc() and _pids() == [1]
                    finally:
                        os._exit(0 if ok else 1)
                _, st = os.waitpid(init, 0)
                code = os.waitstatus_to_exitcode(st)
        finally:
            os._exit(code)
    _, st = os.waitpid(pid, 0)
    return mode if os.waitstatus_to_exitcode(st) == 0 else None


def _read_only(target: str) -> None:
    """Make a bind mount read-only (it usually is already: a bind of a read-only mount that the
    kernel locked when it entered this namespace)."""
    try:
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    except OSError:
        if not os.statvfs(target).f_flag & os.ST_RDONLY:
            raise


def drop_privileges() -> None:
    """In C: an unprivileged uid of its own (rlimit backend as root), no capabilities (none in the
    run's user namespace either: it cannot unmount its /proc), and no privilege gain through execve."""
    if cfg.run_uid is not None:
        os.setgroups([])
        os.setgid(cfg.run_uid)  # as root: real, effective and saved ids
        os.setuid(cfg.run_uid)
    _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)

    class Hdr(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    if hasattr(_libc, "capset"):  # Linux
        _libc.capset(ctypes.byref(Hdr(0x20080522, 0)), (Data * 2)())


def set_rlimits(limits: dict) -> None:
    import resource

    mb = 1024 * 1024
    vsz = 0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    vsz = int(line.split()[1]) * 1024
    except OSError:
        pass
    # memory_mb is what the code may allocate on top of the warm interpreter (sympy, numpy, scipy
    # already mapped), so a 256 MB limit means 256 MB for the user's own data.
    mem = vsz + int(limits["memory_mb"]) * mb
    cpu = int(limits.get("cpu_s") or limits["timeout_s"] + 1)
    for res, val in (
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_CPU, max(1, cpu)),
        (resource.RLIMIT_FSIZE, int(limits["max_file_mb"]) * mb),
        (resource.RLIMIT_NPROC, int(limits["max_processes"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 1024),
    ):
        try:
            resource.setrlimit(res, (val, val))
        except (ValueError, OSError, OverflowError):  # beyond what the kernel takes: no lower limit
            pass


# ---------------------------------------------------------------- rlimit backend without namespaces: the whole tree
def _cgroup_kill() -> None:
    if cfg.cgroup is None:
        return
    try:
        _write_file(os.path.join(cfg.cgroup, "cgroup.kill"), "1")
    except OSError:  # a kernel before cgroup.kill: kill what cgroup.procs lists
        for _ in range(20):
            try:
                with open(os.path.join(cfg.cgroup, "cgroup.procs")) as fh:
                    pids = [int(p) for p in fh.read().split()]
            except (OSError, ValueError):
                return
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass


def _uid_kill() -> None:
    """Every process of the run's own uid (no other process has it): kill(-1) from that uid
    reaches exactly them, whatever session or parent they moved to. kill(-1) walks the process
    list under the lock fork needs, and a process with a pending SIGKILL cannot finish a fork, so
    one pass reaches all. Root keeps its saved uid to come back (no fork needed)."""
    if cfg.run_uid is None or not hasattr(os, "setresuid"):
        return
    os.setresuid(cfg.run_uid, cfg.run_uid, 0)
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.setresuid(0, 0, 0)


def kill_run_tree() -> None:
    _cgroup_kill()
    _uid_kill()


def sweep() -> None:
    """Kill whatever a run left behind as our orphans (we are a child subreaper), then reap."""
    me = os.getpid()
    for _ in range(20):
        victims = []
        for pid in _pids():
            if pid in (me, 1):
                continue
            st = _proc_stat(pid)
            if st is not None and st[0] == me:
                victims.append(pid)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        if not victims:
            return
        time.sleep(0.002)


def _make_cgroup() -> str | None:
    """A cgroup (v2) of our own for the runs' processes, when this process may make one."""
    try:
        with open("/proc/self/cgroup") as fh:
            rel = next((line.strip()[3:] for line in fh if line.startswith("0::")), None)
        with open("/proc/self/mountinfo") as fh:
            base = next((line.split()[4] for line in fh if " - cgroup2 " in line), None)
    except OSError:
        return None
    if rel is None or base is None:
        return None
    path = os.path.join(base, rel.lstrip("/"), f"physlab-sandbox-{os.getpid()}")
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:  # usable only if a process of ours can be moved in (and back out)
        pid = os.fork()
        if pid == 0:
            try:
                _write_file(os.path.join(path, "cgroup.procs"), "0")
                os._exit(0)
            except OSError:
                os._exit(1)
        _, st = os.waitpid(pid, 0)
        if os.WEXITSTATUS(st) == 0:
            return path
    except OSError:
        pass
    try:
        os.rmdir(path)
    except OSError:
        pass
    return None


def reach_hidden_paths() -> None:
    """In the zygote, once (rlimit backend as root): import directories the runs' uid cannot reach
    (an interpreter under a home only root may enter) become /proc/self/fd/N paths through a
    descriptor opened now and inherited by every run, in sys.path and in the packages already
    imported, so a run's later imports still work and nothing else of that home opens."""
    if cfg.run_uid is None or not cfg.hidden_paths:
        return
    moved = {}
    for i, entry in enumerate(sys.path):
        if entry in cfg.hidden_paths:
            try:
                fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            sys.path[i] = moved[entry + "/"] = f"/proc/self/fd/{fd}"
    prefixes = tuple(sorted(moved, key=len, reverse=True))
    for module in list(sys.modules.values()):
        path = getattr(module, "__path__", None)
        if type(path) is not list:  # namespace packages recompute theirs from sys.path
            continue
        for i, p in enumerate(path):
            hit = next((h for h in prefixes if p.startswith(h)), None)
            if hit is not None:
                path[i] = moved[hit] + "/" + p[len(hit):]
    sys.path_importer_cache.clear()


def _others_can_read(path: str) -> bool:
    """Can a user with no relation to the owner list ``path`` (every parent searchable by others)?"""
    path = os.path.abspath(path)
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return False
        while path != "/":
            path = os.path.dirname(path)
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True
