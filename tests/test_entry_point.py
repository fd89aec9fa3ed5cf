"""The `physlab` command as a user starts it: the console script pip installs."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

# Started as a sitecustomize, before the command's own code: a Ctrl-C that lands while the command
# line is still importing its capabilities (a few seconds on a slow machine).
_CTRL_C_MID_IMPORT = """
import sys

class _CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "physlab.cli.runs":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, _CtrlC())
"""


def test_ctrl_c_while_the_command_line_still_imports_is_one_line_and_exit_130(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(_CTRL_C_MID_IMPORT)
    script = Path(sysconfig.get_path("scripts")) / "physlab"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    p = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert (p.returncode, p.stderr) == (130, "interrupted\n")
    assert p.stdout == ""
    # without the Ctrl-C the same command works (the hook is what stopped it)
    ok = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "bench" in ok.stdout


def test_the_command_line_loads_the_dashboard_only_for_ui():
    """Every `physlab` command (and every worker of a sweep) imports the command line; the
    dashboard's FastAPI app and the report's scipy are ~1 s of that on a slow machine, needed by
    `physlab ui` and `bench report` alone."""
    code = ("import sys, physlab.cli; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'scipy.stats') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_a_mistyped_option_or_value_is_one_line_and_exit_2(capsys):
    """click's usage errors are said like PhysLab's own bad input: one line naming the option."""
    import pytest

    from physlab.cli import main

    for argv, needle in ((["solve", "p.yaml", "-m", "scripted:echo", "--max-cost", "-1"], "'--max-cost'"),
                         (["runs", "rewind", "some-run", "--to", "abc"], "'--to'"),
                         (["bench", "run", "examples", "--no-such-flag"], "--no-such-flag"),
                         (["runs", "comment", "some-run"], "'text'")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2, argv
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and needle in err, err
        assert "--help`" in err  # where to look next
    with pytest.raises(SystemExit) as exc:  # a group without a command still shows its help
        main(["bench"])
    assert exc.value.code == 2 and "export-critpt" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
