"""The research lab: PhysLab's default strategy (nine roles around a persistent ResearchState).

Layout: ``state/`` (pydantic models, pure transitions, invariants, Markdown rendering),
``roles/`` (one module + one prompt file per role), ``context`` (per-role prompt assembly),
``engine`` (the loop), ``routing`` (critiques and human messages), ``workspace`` (git run
directory, resume), ``inbox`` (human input), ``console`` (live view), ``show`` (`physlab runs show`).
"""
