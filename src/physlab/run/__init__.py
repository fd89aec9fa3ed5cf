"""A run: one strategy on one problem in its own directory, as one object.

``files`` names the run directory's files and writes them whole; ``lock`` lets one process run a
run at a time; ``git`` keeps a run in git (the lab's). ``environment`` is what the runner hands a
strategy (:class:`~physlab.run.environment.RunEnvironment`), ``attempt`` what a strategy hands back,
``checkpoints`` its best answer each time it changed. ``runner`` runs one (``run``), ``progress``
and ``console`` show it going, ``cli`` is `physlab runs ...`. This package sits below the lab and
every strategy (they receive its environment) and above the model seam, the grader and the
sandbox; only its ``cli`` (a command, on the top floor like every ``cli.py``) imports upward.
"""
