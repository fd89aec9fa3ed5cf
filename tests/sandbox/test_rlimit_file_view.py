"""The rlimit fallback where the kernel gives mount namespaces: a run sees the system, the Python
installation and its own work directory, and nothing else of the host's file system — not
``/sys``, not a problem file with its reference answer, not PhysLab's own suites, not ``/work``, not
``$HOME`` — as root and as an unprivileged user. What runs there still runs: the scientific stack,
a subprocess, a new Python.

Each test is the attack as model-written code would make it."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

import physlab
from physlab.sandbox import Sandbox, SandboxLimits, launch

from .test_rlimit_namespaces import as_nobody, nobody_box  # noqa: F401 - the fixture, as an unprivileged user

pytestmark = pytest.mark.skipif(not launch.rlimit_namespaces(),
                                reason="the kernel gives the rlimit backend no namespaces here")

REFERENCE = "r_isco = 6*M  # physlab-reference-" + os.urandom(6).hex()
BUILTIN = Path(physlab.__file__).parent / "problems" / "data" / "examples"

PROBE = r"""
import json, os
found = {}
for p in PROBES:
    try:
        with open(p) as fh:
            found[p] = 'READ ' + fh.read(200)
    except IsADirectoryError:
        found[p] = 'LISTED ' + ' '.join(sorted(os.listdir(p))[:20])
    except OSError as e:
        found[p] = 'hidden ' + str(e.errno)
print(json.dumps(found))
"""


@pytest.fixture
def problem_file():
    """A problem file any user may read, outside every directory a run needs (as a physicist's
    suite would be, or a checkout's)."""
    d = Path(tempfile.mkdtemp(prefix="physlab-suite-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    os.chmod(d, 0o755)
    f = d / "isco.yaml"
    f.write_text(f"problem: Find the ISCO radius.\nanswer: {REFERENCE}\n")
    os.chmod(f, 0o644)
    yield f
    shutil.rmtree(d, ignore_errors=True)


def probes(problem: Path) -> list[str]:
    builtin = sorted(str(p) for p in BUILTIN.glob("*.yaml"))[:1]
    home = Path(os.path.expanduser("~"))
    python_roots = [Path(r) for r in launch.python_roots()]
    # entries of the real home that are not on the way to the (read-only) Python installation
    private = [str(p) for p in sorted(home.iterdir())[:30] if not any(r == p or p in r.parents for r in python_roots)]
    return [str(problem), str(problem.parent), *builtin, str(BUILTIN), "/sys/kernel", "/sys/class/net",
            "/sys", "/work", "/home", *private, "/etc/passwd", "/etc/shadow", "/var/tmp",
            str(Path(launch.__file__).parent)]


def seen(res) -> dict[str, str]:
    assert res.exit_code == 0, res.stderr + res.error
    return json.loads(res.stdout)


def reached(found: dict[str, str]) -> dict[str, str]:
    return {p: v for p, v in found.items() if not v.startswith("hidden")}


@pytest.fixture(scope="module")
def rl():
    box = Sandbox("rlimit", workers=1)
    yield box
    box.close()


def test_a_run_reads_no_problem_file_no_suite_and_no_sys(rl, problem_file):
    found = seen(rl.run_sync(PROBE.replace("PROBES", repr(probes(problem_file)))))
    assert not reached(found), reached(found)
    assert REFERENCE not in json.dumps(found)


def test_what_a_run_needs_is_still_there(rl):
    res = rl.run_sync(
        "import subprocess, sys, numpy, scipy.special, sympy, matplotlib.pyplot as plt\n"
        "x = sympy.Symbol('x')\n"
        "print(sympy.integrate(x**2, (x, 0, 3)), round(float(scipy.special.gamma(5))))\n"
        "plt.plot([0, 1]); plt.savefig('plot.png')\n"
        "print(subprocess.run(['/bin/sh', '-c', 'echo shell'], capture_output=True, text=True).stdout.strip())\n"
        "print(subprocess.run([sys.executable, '-c', 'import sympy; print(sympy.sqrt(4))'], capture_output=True,"
        " text=True).stdout.strip())\n"
        "import os; print(os.path.exists('/dev/null'), os.path.exists('/proc/self/status'))\n",
        collect=["plot.png"], limits=SandboxLimits(timeout_s=60))
    assert res.exit_code == 0, res.stderr + res.error
    assert res.stdout.splitlines() == ["9 24", "shell", "2", "True True"], res.stdout
    assert res.files["plot.png"].startswith(b"\x89PNG")


def test_the_only_writable_places_are_the_work_dir_and_its_shm(rl):
    res = rl.run_sync(
        "import os\n"
        "for target in ('/tmp/physlab-probe', '/var/tmp/physlab-probe', '/usr/physlab-probe', '/physlab-probe',"
        " os.path.dirname(os.getcwd()) + '/physlab-probe', '/dev/physlab-probe'):\n"
        "    try:\n"
        "        open(target, 'w').write('x')\n"
        "        print('WROTE', target)\n"
        "    except OSError:\n"
        "        print('denied')\n"
        "open('here.txt', 'w').write('mine')\n"
        "open('/dev/shm/note', 'w').write('mine too')\n"
        "print(open('here.txt').read(), open('/dev/shm/note').read())\n")
    assert res.exit_code == 0, res.stderr + res.error
    assert "WROTE" not in res.stdout and res.stdout.count("denied") == 6, res.stdout
    assert "mine mine too" in res.stdout
    assert not os.path.exists("/tmp/physlab-probe") and not os.path.exists("/var/tmp/physlab-probe")


def test_a_run_cannot_climb_out_through_its_descriptors_or_its_proc(rl):
    """Its open files and /proc point into its own view: no '..' leads back to the host's root."""
    res = rl.run_sync(
        "import os\n"
        "hits = []\n"
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    for up in ('', '/..', '/../..', '/../../..', '/../../../..'):\n"
        "        p = f'/proc/self/fd/{fd}{up}'\n"
        "        try:\n"
        "            names = os.listdir(p)\n"
        "        except OSError:\n"
        "            continue\n"
        "        if 'work' in names or 'home' in names or 'sys' in names:\n"
        "            hits.append((p, sorted(names)[:10]))\n"
        "for p in ('/proc/1/root/work', '/proc/self/root/work', '/proc/self/cwd/../../../work'):\n"
        "    if os.path.exists(p):\n"
        "        hits.append(p)\n"
        "print(hits)\n")
    assert res.exit_code == 0, res.stderr + res.error
    assert res.stdout.strip() == "[]", res.stdout


@as_nobody
def test_as_an_unprivileged_user_a_run_reads_no_problem_file_and_no_sys(nobody_box, problem_file):  # noqa: F811
    found = seen(nobody_box.run_sync(PROBE.replace("PROBES", repr(probes(problem_file)))))
    assert not reached(found), reached(found)
    res = nobody_box.run_sync("import fractions, subprocess\nprint(fractions.Fraction(1, 3) * 6)\n"  # (the system
                              "print(subprocess.run(['/bin/echo', 'ok'], capture_output=True, text=True).stdout)")
    assert res.exit_code == 0 and res.stdout.split() == ["2", "ok"], res.stderr + res.error  # Python: no SymPy)
