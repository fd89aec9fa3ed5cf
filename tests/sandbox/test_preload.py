"""What a pool's workers import before their first run (physlab.sandbox.preload): the whole stack
for the lab's long-lived pools, only what a one-run command's script names for `sandbox run`."""

from __future__ import annotations

import pytest

from physlab.sandbox import Sandbox, preload

from .conftest import needs_bwrap


@pytest.mark.parametrize("code, expected", [
    ("import numpy as np\n", ("numpy",)),
    ("from scipy.linalg import eig\n", ("scipy", "scipy.integrate", "scipy.special", "scipy.linalg", "scipy.optimize")),
    ("def f():\n    import matplotlib.pyplot as plt\n", ("matplotlib", "matplotlib.pyplot")),
    ("import sympy, mpmath\n", ("sympy", "mpmath")),
    # hard negatives: a package that only starts like one, a relative import, a string, bad syntax
    ("import sympy_extras\nimport numpyro\n", ()),
    ("from .numpy import x\n", ()),
    ("print('import numpy')\n", ()),
    ("import numpy as\n", ()),
])
def test_a_script_preloads_the_stacks_modules_it_names(code, expected):
    assert preload.for_script(code) == expected


def test_a_name_outside_the_stack_is_refused():
    with pytest.raises(ValueError, match="os"):
        preload.check(("sympy", "os"))


@needs_bwrap
def test_a_pool_that_asks_for_less_imports_less_and_its_trusted_pool_too():
    box = Sandbox("bwrap", workers=1, preload=preload.GRADING)
    try:
        code = "import sys\nprint(sorted(m for m in ('sympy', 'scipy', 'matplotlib') if m in sys.modules))\n"
        assert box.run_sync(code).stdout == "['sympy']\n"
        assert box.trusted.run_sync(code).stdout == "['sympy']\n"
    finally:
        box.close()
