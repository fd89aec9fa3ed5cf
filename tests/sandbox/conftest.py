"""Sandbox fixtures: one bubblewrap sandbox per module (warm workers are the point), helpers to
look for processes a run may have left on the host."""

from __future__ import annotations

import pytest

from physlab.sandbox import Sandbox, launch


def bwrap_ok() -> bool:
    return launch.bwrap_works()[0]


needs_bwrap = pytest.mark.skipif(not bwrap_ok(), reason="bubblewrap does not work on this machine")


@pytest.fixture(scope="session")
def sb():
    if not bwrap_ok():
        pytest.skip("bubblewrap does not work on this machine")
    box = Sandbox("bwrap", workers=2)
    yield box
    box.close()


@pytest.fixture(scope="session")
def sb1():
    """One worker only: consecutive runs are guaranteed to reuse the same zygote."""
    if not bwrap_ok():
        pytest.skip("bubblewrap does not work on this machine")
    box = Sandbox("bwrap", workers=1)
    yield box
    box.close()


@pytest.fixture(scope="session")
def rl():
    box = Sandbox("rlimit", workers=1)
    yield box
    box.close()
