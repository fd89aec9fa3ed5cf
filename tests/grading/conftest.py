"""Grading fixtures: one warm sandbox and one Grader for the whole session (short timeouts so
hostile candidates end quickly)."""

from __future__ import annotations

import pytest

from physlab.grading import Grader
from physlab.sandbox import Sandbox


@pytest.fixture(scope="session")
def grading_sandbox():
    box = Sandbox(workers=2)
    box.warm()  # start the workers from this (long-lived) thread
    yield box
    box.close()


@pytest.fixture(scope="session")
def grader(grading_sandbox):
    return Grader(grading_sandbox, timeout_s=4.0, compare_timeout_s=40.0, step_timeout_s=3.0, memory_mb=1024)
