"""Fixtures for the model-seam tests."""

from __future__ import annotations

import pytest

from physlab.llm.meter import RunMeter


@pytest.fixture(autouse=True)
def _close_test_meters(monkeypatch):
    """These tests build RunMeters by hand; in the product ``physlab.run.runner.run`` closes each one it opens.
    Close the ones a test opened, so an unclosed calls.jsonl here is never mistaken for a leak."""
    opened: list[RunMeter] = []
    real_open = RunMeter.open

    def open_and_track(self: RunMeter) -> None:
        real_open(self)
        opened.append(self)

    monkeypatch.setattr(RunMeter, "open", open_and_track)
    yield
    for meter in opened:
        meter.close()
