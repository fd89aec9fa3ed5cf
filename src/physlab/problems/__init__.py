"""Problems: the Problem model, loaders for every supported format, and the built-in suites.

Entry points: :func:`resolve_problem` (a file, ``FILE#ID``, ``SUITE/ID``), :func:`load_suite`
(a suite name or directory), :func:`load_file`, :func:`list_suites`, :func:`import_suite`.
"""

from physlab.problems.model import Problem, ReferenceFormat
from physlab.problems.files import load_directory, load_file
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
