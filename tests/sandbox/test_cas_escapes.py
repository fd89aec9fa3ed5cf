"""The sandbox's escape attacks again, through each algebra system's own file and shell primitives
(FORM's ``#system``, ``#write`` and ``#include``; Maxima's ``system()``, ``printfile``, ``with_stdout``
and ``:lisp``; the Wolfram Language's ``Run``, ``Import``, ``Put``, ``Export`` and ``Environment``;
Cadabra2's Python): the network, the host's files and environment, writing outside the run's own
directory, fork bombs and endless loops are contained, under both backends."""

from __future__ import annotations

import os
import socket
import tempfile
import uuid
from pathlib import Path

import pytest

from physlab.sandbox import Sandbox, SandboxLimits, launch
from physlab.tools import cas

from .sb_helpers import _tree, pids_with

SECRET_ENV = "PHYSLAB_CAS_TEST_SECRET"
SECRET_VALUE = "sk-cas-" + uuid.uuid4().hex


@pytest.fixture(scope="module", params=["bwrap", "rlimit"])
def box(request):
    """A sandbox started while this process holds a secret in its environment."""
    if request.param == "bwrap" and not launch.bwrap_works()[0]:
        pytest.skip("bubblewrap does not work on this machine")
    os.environ[SECRET_ENV] = SECRET_VALUE
    try:
        sandbox = Sandbox(request.param, workers=1)
        sandbox.warm(1)
    finally:
        del os.environ[SECRET_ENV]
    yield sandbox
    sandbox.close()


@pytest.fixture
def host(tmp_path):
    """A loopback service, a file only its owner may read, and a directory only its owner may write."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    private = Path(tempfile.mkdtemp(prefix="physlab-cas-private-"))  # 0700
    secret = private / "secret.txt"
    token = "physlab-cas-file-" + uuid.uuid4().hex
    secret.write_text(token + "\n")
    secret.chmod(0o600)
    target = Path(tempfile.mkdtemp(prefix="physlab-cas-target-", dir="/tmp"))
    target.chmod(0o755)  # others may enter, not write
    yield {"port": server.getsockname()[1], "secret": str(secret), "token": token, "target": str(target),
           "server": server}
    server.close()
    for d in (private, target):
        for p in d.iterdir():
            p.unlink()
        d.rmdir()


def accepted(server: socket.socket) -> int:
    n = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return n
        conn.close()
        n += 1


SHELL_ATTACK = """\
(echo > /dev/tcp/127.0.0.1/{port}) && echo CONNECTED || echo BLOCKED-NET
cat {secret} || echo BLOCKED-READ
env
echo x > {target}/shell.txt || echo BLOCKED-WRITE
echo x > /usr/physlab-cas-probe || echo BLOCKED-USR
echo x > /etc/physlab-cas-probe || echo BLOCKED-ETC
"""


def attack(language: str, h: dict) -> tuple[str, bytes | None]:
    """The attack program in the system's own language (its shell primitive runs attack.sh, the
    shell attack, from the run's directory), and its standard input."""
    if language == "form":
        return ("#system bash attack.sh\n"
                f"#write <{h['target']}/form-write.txt> \"x\"\n"
                f"#include {h['secret']}\n"
                ".end\n"), None
    if language == "maxima":
        return ("system(\"bash attack.sh\")$\n"
                f"errcatch(printfile(\"{h['secret']}\"))$\n"
                f":lisp (print (si::getenv \"{SECRET_ENV}\"))\n"
                f"errcatch(with_stdout(\"{h['target']}/maxima-write.txt\", print(\"x\")))$\n"), None
    if language == "wolfram":
        return (f"Quiet[Import[\"http://127.0.0.1:{h['port']}/\", \"Text\"]]\n"
                f"Quiet[ReadString[\"{h['secret']}\"]]\n"
                f"Environment[\"{SECRET_ENV}\"]\n"
                f"Quiet[Put[1, \"{h['target']}/wl-put.txt\"]]\n"
                f"Quiet[Export[\"{h['target']}/wl-export.txt\", \"x\", \"Text\"]]\n"
                "Run[\"sh\"]\n"), b"bash attack.sh\n"
    assert language == "cadabra2"
    return (f"""import os, socket, subprocess
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", {h['port']}))
    print("CONNECTED")
except OSError:
    print("BLOCKED-NET")
try:
    print(open("{h['secret']}").read())
except OSError:
    print("BLOCKED-READ")
print(dict(os.environ))
for p in ("{h['target']}/cdb-write.txt", "/usr/physlab-cas-probe"):
    try:
        open(p, "w").write("x")
        print("WROTE", p)
    except OSError:
        print("BLOCKED-WRITE")
subprocess.run(["bash", "attack.sh"])
""", None)


def skip_unless_available(language: str) -> None:
    st = cas.system_status(language)
    if not st.available:
        pytest.skip(st.reason)


@pytest.mark.parametrize("language", ["form", "maxima", "wolfram", "cadabra2"])
def test_network_host_files_environment_and_writes_are_contained(box, host, language):
    skip_unless_available(language)
    code, stdin = attack(language, host)
    shell = SHELL_ATTACK.format(**host).encode()
    res = cas.execute_sync(code, language, box, SandboxLimits(timeout_s=120), stdin=stdin,
                           files={"attack.sh": shell})
    seen = res.stdout + res.stderr
    assert not res.timed_out and res.error == "", res
    assert SECRET_VALUE not in seen  # the caller's environment
    assert not Path("/usr/physlab-cas-probe").exists() and not Path("/etc/physlab-cas-probe").exists()
    assert "BLOCKED-USR" in seen, seen[-3000:]  # the attack did run
    if box.backend == "bwrap" or os.geteuid() == 0:  # the rlimit fallback as your user runs as you
        assert host["token"] not in seen  # a file only its owner may read
        assert not any(Path(host["target"]).iterdir())  # a directory only its owner may write
        assert "BLOCKED-READ" in seen and "BLOCKED-WRITE" in seen, seen[-3000:]
    if box.backend == "bwrap" or launch.rlimit_namespaces():
        assert accepted(host["server"]) == 0 and "CONNECTED" not in seen
        assert "BLOCKED-NET" in seen


def through_the_shell(language: str, script: str) -> tuple[str, bytes | None]:
    """A program that runs the shell script ``script`` through the system's own shell primitive."""
    if language == "form":
        return f"#system bash {script}\n.end\n", None
    if language == "maxima":
        return f"system(\"bash {script}\")$\n", None
    if language == "wolfram":
        return "Run[\"sh\"]\n", f"bash {script}\n".encode()
    return f"import subprocess\nsubprocess.run(['bash', {script!r}])\n", None


# The script goes on (with builtins only) after starting the bomb: a run that ended at once would
# take the bomb with it before it reached any limit.
FORK_BOMB = "b(){ b | b & }; b\nwhile :; do :; done\n"


def run_processes(box: Sandbox) -> int:
    """Every host process under the sandbox's idle workers: each worker and the manager it forked
    for its next run (a finished run leaves nothing else)."""
    return sum(len(_tree(w.proc.pid)) for w in list(box._pool._idle))


@pytest.mark.slow
@pytest.mark.parametrize("language", ["form", "maxima", "wolfram", "cadabra2"])
def test_a_fork_bomb_through_the_system_is_bounded_and_leaves_nothing(box, language):
    skip_unless_available(language)
    box.run_sync("pass")
    before = run_processes(box)
    script = f"bomb-{uuid.uuid4().hex[:12]}.sh"  # in the command line of every shell of the bomb
    code, stdin = through_the_shell(language, script)
    limits = SandboxLimits(timeout_s=15, max_processes=16)
    res = cas.execute_sync(code, language, box, limits, stdin=stdin, files={script: FORK_BOMB.encode()})
    # killed at the limit (a run's own process count, bwrap), or every fork beyond it refused
    # (RLIMIT_NPROC) until the timeout; either way within its time (as the worker measured it: the
    # machine's load is not the sandbox's), or the worker was given up on and replaced
    assert res.limit_hit in ("processes", "timeout"), res
    assert res.duration_s < limits.timeout_s + 5
    # at once: the run is reaped when it returns (by its worker, or when the worker was replaced)
    assert pids_with(script) == []
    if not res.error:
        assert run_processes(box) == before
    after = box.run_sync("print('still serving')")
    assert after.stdout == "still serving\n"


def endless(language: str) -> str:
    """After starting sleeper.sh in the background through the shell primitive, an endless loop in
    the system's own language."""
    start, _ = through_the_shell(language, "sleeper.sh")
    if language == "form":
        return start.replace(".end\n", "") + "#do i = 1, 1000000\n#do j = 1, 1000000\n#enddo\n#enddo\n.end\n"
    if language == "maxima":
        return start + "do x: 1$\n"
    if language == "wolfram":
        return start + "While[True, Null]\n"
    return start + "while True:\n    pass\n"


@pytest.mark.slow
@pytest.mark.parametrize("language", ["form", "maxima", "wolfram", "cadabra2"])
def test_an_endless_computation_hits_the_hard_timeout_and_its_children_die(box, language):
    skip_unless_available(language)
    token = "physlab-cas-sleeper-" + uuid.uuid4().hex[:12]
    code = endless(language)
    _, stdin = through_the_shell(language, "sleeper.sh")
    sleeper = f"exec -a {token} sleep 600 &\n".encode()  # named so that the host can look for it
    timeout = {"wolfram": 25.0, "cadabra2": 10.0}.get(language, 5.0)  # Mathics3 starts slowly
    res = cas.execute_sync(code, language, box, SandboxLimits(timeout_s=timeout), stdin=stdin,
                           files={"sleeper.sh": sleeper})
    assert res.timed_out and res.limit_hit == "timeout", res
    assert res.duration_s < timeout + 5
    assert pids_with(token) == []  # at once: the run is reaped when it returns
