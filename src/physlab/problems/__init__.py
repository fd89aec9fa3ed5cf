"""Problems: the Problem model, loaders for every supported format, and the built-in suites.

Entry points: :func:`resolve_problem` (a file, ``FILE#ID``, ``SUITE/ID``), :func:`load_suite`
(a suite name or directory), :func:`load_file`, :func:`list_suites`, :func:`import_suite`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from physlab.lazy import lazy_exports

if TYPE_CHECKING:
    from physlab.problems.files import load_directory, load_file
    from physlab.problems.model import Problem, ReferenceFormat
    from physlab.problems.suites import (
        SuiteInfo,
        import_suite,
        list_suites,
        load_suite,
        resolve_problem,
        user_data_dir,
        user_suites_dir,
    )
    from physlab.problems.templates import TemplateInfo, parse_template

# Each name is imported from its module on first use: the command line imports this package to register
# its commands, and a help text should not pay for the loaders (pydantic, YAML).
_FROM: dict[str, tuple[str, ...]] = {
    "physlab.problems.model": ("Problem", "ReferenceFormat"),
    "physlab.problems.files": ("load_directory", "load_file"),
    "physlab.problems.suites": ("SuiteInfo", "import_suite", "list_suites", "load_suite", "resolve_problem",
                                "user_data_dir", "user_suites_dir"),
    "physlab.problems.templates": ("TemplateInfo", "parse_template"),
}
__all__ = [
    "Problem",
    "ReferenceFormat",
    "SuiteInfo",
    "TemplateInfo",
    "import_suite",
    "list_suites",
    "load_directory",
    "load_file",
    "load_suite",
    "parse_template",
    "resolve_problem",
    "user_data_dir",
    "user_suites_dir",
]

__getattr__, __dir__ = lazy_exports(__name__, _FROM)
