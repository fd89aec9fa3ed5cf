"""A run: one strategy on one problem in its own workspace.

``context`` holds what the runner hands a strategy (:class:`~physlab.runs.context.RunContext`):
it lives here, beside every strategy rather than inside one, because the lab and the other
scaffolds all receive it. ``checkpoints`` is a run's best answer so far each time it changed,
which every strategy records and the bench report reads accuracy-against-budget from. ``cli`` is
`physlab runs ...`, which reads and talks to any run
directory.
"""
