"""A run: one strategy on one problem in its own workspace.

``context`` holds what the runner hands a strategy (:class:`~physlab.runs.context.RunContext`):
it lives here, beside every strategy rather than inside one, because the lab and the other
scaffolds all receive it. ``cli`` is `physlab runs ...`, which reads and talks to any run
directory.
"""
