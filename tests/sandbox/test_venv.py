"""The interpreter's environment is mounted wherever it lives: a real virtual environment created
under /tmp (which the sandbox covers with its own tmpfs) keeps its packages inside the sandbox; and
an installed PhysLab's own files (problem suites with their reference answers) are not readable
there."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import needs_bwrap

SRC = Path(__file__).resolve().parents[2] / "src"


def _venv(parent: str):
    root = Path(tempfile.mkdtemp(dir=parent, prefix="physlab-venv-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(root)],
                       check=True, capture_output=True, timeout=120)
        python = root / "bin" / "python"
        site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        (site / "physlab_venv_probe.py").write_text("VALUE = 42\n")
        yield python, site
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def tmp_venv():
    yield from _venv("/tmp")


@pytest.fixture(scope="module")
def var_venv():
    yield from _venv("/var/tmp")  # not under the sandbox's own /tmp: mounted before the fix too


def _run_in(python: Path, code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    caller = ("import sys\nfrom physlab.sandbox import Sandbox\n"
              "box = Sandbox('bwrap', workers=1)\n"
              "res = box.run_sync(sys.argv[1])\n"
              "print(res.stdout, res.stderr, res.error)\n"
              "box.close()\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", **env_extra}
    return subprocess.run([str(python), "-c", caller, code], env=env, capture_output=True, text=True, timeout=180)


@needs_bwrap
def test_a_venv_under_tmp_keeps_its_packages_inside_the_sandbox(tmp_venv):
    python, _ = tmp_venv
    out = _run_in(python, "import sys, physlab_venv_probe, sympy\nprint('value', physlab_venv_probe.VALUE)\n"
                          "print(sys.prefix)", {"PYTHONPATH": str(SRC)})
    assert out.returncode == 0, out.stderr
    assert "value 42" in out.stdout, out.stdout
    assert str(python.parent.parent) in out.stdout  # the venv's interpreter, not its base


@needs_bwrap
@pytest.mark.parametrize("where", ["tmp_venv", "var_venv"])
def test_an_installed_physlabs_problem_files_are_not_readable_inside(where, request):
    """A regular (non-editable) install puts the built-in suites, references included, in
    site-packages, which the sandbox mounts: PhysLab's own package directory is hidden."""
    python, site = request.getfixturevalue(where)
    shutil.copytree(SRC / "physlab", site / "physlab", dirs_exist_ok=True)
    try:
        data = site / "physlab" / "problems" / "data"
        probe = next(p for p in data.rglob("*") if p.is_file())
        out = _run_in(python, f"import os\nprint('listed', os.listdir({str(data)!r}))\n"
                              f"print('read', open({str(probe)!r}).read()[:40])", {})
        assert out.returncode == 0, out.stderr
        assert str(site) in subprocess.run([str(python), "-c", "import physlab; print(physlab.__file__)"],
                                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}).stdout
        assert "read " not in out.stdout and "Error" in out.stdout, out.stdout
    finally:
        shutil.rmtree(site / "physlab", ignore_errors=True)
