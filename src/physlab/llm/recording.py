"""The names the model seam was known by before it was split into one layer per concern
(:mod:`physlab.llm.seam`): ``RecordingModel(wrapped, role=..., spec=..., meter=..., ...)`` gives
the whole seam around ``wrapped`` (:func:`physlab.llm.seam.seam_model`); ``RetryPolicy`` and
``ModelLimits`` live in :mod:`physlab.llm.defaults` and :mod:`physlab.llm.seam.limits`."""

from __future__ import annotations

from typing import Any

from pydantic_ai.models import Model

from physlab.llm.defaults import RetryPolicy
from physlab.llm.seam import SeamModel, seam_model
from physlab.llm.seam.limits import ModelLimits

__all__ = ["ModelLimits", "RecordingModel", "RetryPolicy"]


def RecordingModel(wrapped: Model, **options: Any) -> SeamModel:  # the name importers know
    """The model seam around ``wrapped`` (see :func:`physlab.llm.seam.seam_model` for the options)."""
    return seam_model(wrapped, **options)
