"""How a run is confined: its namespaces and mounts (for the rlimit backend, the file system it
sees), its limits and privileges, and (rlimit backend without namespaces) the whole-tree kill, the
cgroup and the unprivileged uid. Standard library only."""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys

from _zygote_common import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    MNT_DETACH,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    SANDBOX_UID,
    _libc,
    _mount,
    _pids,
    _prctl,
    _proc_stat,
    _write_file,
    cfg,
)

RUN_NAMESPACES = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET  # the rlimit backend's, per run

# What a run of the rlimit backend sees of the host's files, as under bubblewrap (launch.bwrap_argv
# binds the same): the system and the Python installation read-only, a few /etc files and /dev
# nodes, /proc (its own), and a fresh tmpfs for its work directory. Nothing else: not /sys, $HOME,
# /work, /var, a problem file or PhysLab's own suites.
SYSTEM_DIRS = ("usr", "bin", "lib", "lib32", "lib64", "libx32", "sbin")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "alternatives", "mime.types",
             "matplotlibrc")
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "ppc64": 203, "s390x": 217,
               "i686": 217, "i386": 217, "armv7l": 218, "armv6l": 218, "loongarch64": 41}


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
    directly, else inside a new user namespace where the user is itself), and a root of its own
    (:func:`_pivot_to_view`). The run's /proc is mounted by its init (``mount_own_proc``). '' or
    why not."""
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
        _pivot_to_view(disk_mb)
    except OSError as exc:
        return f"the run's namespaces could not be made ({exc.strerror or exc})"
    finally:
        _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # as the zygote: the run cannot read M or B
    return ""


def python_roots() -> list[str]:
    """The Python installation this interpreter runs from, as ``launch.python_roots`` finds it
    (prefixes, site-packages directories, the interpreter's own directory; not a source checkout
    on sys.path), outermost first."""
    roots = [os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix)]
    roots += [os.path.realpath(p) for p in sys.path
              if p and ("site-packages" in p or "dist-packages" in p) and os.path.isdir(p)]
    for exe in (os.path.abspath(sys.executable), os.path.realpath(sys.executable)):
        roots.append(os.path.dirname(os.path.dirname(exe)))
    out: list[str] = []
    for r in sorted(set(roots), key=len):
        if r in ("/", "/usr") or r.startswith("/usr/"):
            continue  # /usr is bound anyway
        if not any(r == o or r.startswith(o + "/") for o in out):
            out.append(r)
    return out


def _own_packages() -> list[str]:
    """PhysLab's own package where the installation holds it (a regular install): its built-in
    suites carry reference answers, and nothing in a run needs it."""
    out = []
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            pkg = os.path.realpath(os.path.join(p, "physlab"))
            if os.path.isdir(os.path.join(pkg, "problems")) and pkg not in out:
                out.append(pkg)
    return out


def _mount_flags(path: str) -> int:
    """The flags a read-only remount of a bind of ``path`` must carry: in a user namespace the
    kernel locks the source's noexec and access-time flags, and refuses a remount that drops them."""
    st = os.statvfs(path).f_flag
    flags = MS_NOEXEC if st & os.ST_NOEXEC else 0
    if st & os.ST_NOATIME:
        flags |= MS_NOATIME
    elif st & os.ST_RELATIME:
        flags |= MS_RELATIME
    else:
        flags |= MS_STRICTATIME
    return flags | (MS_NODIRATIME if st & os.ST_NODIRATIME else 0)


def _bind(src: str, dst: str, read_only: bool = True) -> None:
    """``src`` at ``dst`` (a file or directory of the new root, made here), read-only unless told."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
    elif not os.path.exists(dst):
        os.close(os.open(dst, os.O_CREAT | os.O_WRONLY, 0o644))
    _mount(src, dst, None, MS_BIND | MS_REC, None)
    if read_only:
        _mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | _mount_flags(src), None)


def _pivot_to_view(disk_mb: int) -> None:
    """In M, in its new mount namespace: build the run's root on a tmpfs (mounted over the worker's
    private directory, which nothing else of the run's view lies under) and make it the root, the
    host's detached. Binds are what :data:`SYSTEM_DIRS` and the rest name; the work directories get a
    tmpfs of ``disk_mb`` (so does /dev/shm); the root itself ends read-only."""
    new = cfg.run_root
    os.umask(0o022)  # (M's own, for the one run) directories of the new root: open to the run's uid

    def at(path: str) -> str:
        return new + path

    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    for name in SYSTEM_DIRS:
        src = "/" + name
        if os.path.islink(src):
            os.symlink(os.readlink(src), at(src))
        elif os.path.isdir(src):
            _bind(src, at(src))
    os.mkdir(at("/etc"))
    for name in ETC_FILES:
        if os.path.exists("/etc/" + name):
            _bind("/etc/" + name, at("/etc/" + name))
    # (Not the worker's own directory: its modules are imported before the first run, and where it
    # lives, a checkout under /work say, is not the run's business.)
    for root in python_roots():
        _bind(root, at(root))
    for pkg in _own_packages():
        if os.path.isdir(at(pkg)):
            _mount("tmpfs", at(pkg), "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=555")
    os.mkdir(at("/dev"))
    for name in DEV_NODES:
        if os.path.exists("/dev/" + name):
            _bind("/dev/" + name, at("/dev/" + name), read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
        os.symlink(target, at("/dev/" + name))
    os.mkdir(at("/dev/shm"))
    _mount("tmpfs", at("/dev/shm"), "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_mb}m,mode=1777,nr_inodes=10000")
    os.mkdir(at("/dev/pts"))
    try:  # a pseudo-terminal of its own where the kernel gives one (pty.openpty())
        _mount("devpts", at("/dev/pts"), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    except OSError:
        pass
    os.mkdir(at("/proc"))  # the host's for now, under the run's own (B mounts it; the kernel lets a
    _mount("/proc", at("/proc"), None, MS_BIND | MS_REC, None)  # user namespace mount one only over a visible one)
    os.makedirs(at(cfg.run_root))
    _mount("tmpfs", at(cfg.run_root), "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_mb}m,mode=711,nr_inodes=100000")
    _mount(None, new, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: no system call number known for {os.uname().machine}")
    os.chdir(new)
    if _libc.syscall(number, b".", b".") != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"pivot_root: {os.strerror(e)}")
    if _libc.umount2(b".", MNT_DETACH) != 0:  # the host's root, stacked over ours by pivot_root(".", ".")
        e = ctypes.get_errno()
        raise OSError(e, f"umount the host's root: {os.strerror(e)}")
    os.chdir("/")


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
    import tempfile

    private = tempfile.mkdtemp(prefix="physlab-probe-")  # stands in for the worker's private directory
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            cfg.run_ns, cfg.run_root = mode, private
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
    os.rmdir(private)
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


def set_rlimits(limits: dict, supervisors: int = 0) -> None:
    """The run's limits, set in C. The kernel counts RLIMIT_NPROC per uid and user namespace
    (since Linux 5.14), so ``max_processes`` is the run's own where the run has a user namespace
    of its own or, as root, a uid of its own; ``supervisors`` are the processes of the run's
    user namespace that are not the run's own (its manager and init), added so that the limit
    counts the code's processes only, as the init's own count does."""
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
        (resource.RLIMIT_NPROC, int(limits["max_processes"]) + supervisors),
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


def reap_all() -> None:
    """In the zygote, after a run's manager exited: kill and reap whatever is left below us until
    we have no child at all. We are a child subreaper, so everything of the run that outlived its
    manager (a run without namespaces: what left its session, its cgroup or uid killed but not yet
    gone) is our descendant, and becomes our child when its parent ends; with no child left,
    nothing the run started exists, zombies included. (A run with its own PID namespace leaves
    nothing: its init's end kills and reaps the rest, so the first wait finds no child.)"""
    me = os.getpid()
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
        except ChildProcessError:
            return
        for pid in _pids():
            st = _proc_stat(pid)
            if st is not None and st[0] == me:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        try:
            os.waitpid(-1, 0)  # one of them has ended (a process with a pending SIGKILL cannot fork)
        except ChildProcessError:
            return


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
    if cfg.run_uid is None or not cfg.hidden_paths or cfg.run_ns:
        return  # (with namespaces a run has a root of its own, where those directories are reachable)
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
