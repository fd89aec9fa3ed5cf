"""A run: one strategy on one problem in its own directory, as one object.

``files`` names the run directory's files and writes them whole; ``lock`` lets one process run a
run at a time; ``git`` keeps a run in git (the lab's). ``environment`` is what the runner hands a
strategy (:class:`~physlab.run.environment.RunEnvironment`), ``attempt`` what a strategy hands back,
``checkpoints`` its best answer each time it changed. ``options`` is how a run is made (recorded
in it), ``record`` what it holds when it ends (and the one reader of both), ``status`` its one
status, ``summary`` its line in a listing, ``resume`` how it is continued as it was made.
``runner`` runs one (``run``); ``progress`` and ``console`` show it going. This package sits below
the lab and every strategy (they receive its environment) and above the model seam, the grader and
the sandbox; `physlab runs ...` is a command (``physlab.cli.runs``).
"""
