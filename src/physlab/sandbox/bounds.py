"""The bounds a caller checks a sandbox limit against before any run: plain numbers, no pydantic,
so that a command declaring its options (`--timeout`'s range) loads nothing else of the sandbox."""

MAX_TIMEOUT_S = 604_800  # a week: a longer --timeout is a typo (and inf/nan cannot be waited for)
