"""Grading runtime: the code that runs INSIDE the sandbox.

These modules are shipped as source files into every grading sandbox run (see
``physlab.grading.runner``), so they import only the standard library, SymPy and mpmath, and each
other through relative imports -- never ``physlab``. They are also importable in-process for
unit tests of the pure logic.

* ``tree``      -- the safe JSON tree an answer crosses process boundaries as (never pickle/eval).
* ``guard``     -- run one step in a forked child with a hard timeout (no signal.alarm).
* ``compare``   -- equivalence of two trees: exact steps, then numeric at random points.
* ``reference`` -- evaluate a reference (Python, number, LaTeX) in the template's names.
* ``stages``    -- the two sandbox entry points: stage 1 (candidate only) and stage 2 (trusted).
"""
