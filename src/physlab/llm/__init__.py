"""The model seam: every scaffold talks to models through this package."""

from physlab.llm.usage import Budget, CallRecord, Usage

__all__ = ["Budget", "CallRecord", "Usage"]
