from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Imported suites go to a per-test PHYSLAB_HOME, never the user's data dir."""
    monkeypatch.setenv("PHYSLAB_HOME", str(tmp_path / "home"))


@pytest.fixture
def write(tmp_path):
    def _write(name: str, text: str | bytes) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(textwrap.dedent(text))
        return p

    return _write


SYMBOLIC_YAML = '''
problem: |
  Find the ISCO radius of a Schwarzschild black hole of mass $M$ ($G=c=1$).
answer_template: |
  import sympy as sp
  M = sp.symbols("M", positive=True)
  def answer(M):
      r_isco = ...
      return r_isco
answer: r_isco = 6*M
solution: Set V' = V'' = 0.
source: test
difficulty: 2
'''
