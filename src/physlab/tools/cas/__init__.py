"""Computer algebra for the lab: FORM, Cadabra2, Maxima and the Wolfram Language (a Wolfram Engine
through wolframclient, else Mathics3), each run in the sandbox like Python.

Usage::

    from physlab.tools import cas
    cas.available_systems()             # every system: available, or one line saying why not
    res = await cas.execute(code, "form", sandbox, limits)   # the sandbox's result, .language set
    cas.SYSTEMS["form"].good_for, cas.SYSTEMS["form"].example  # the example is tested
    cas.describe()                      # all of it as Markdown for a role's prompt
"""

from physlab.tools.cas import detect
from physlab.tools.cas.detect import SystemStatus, available_systems, system_status
from physlab.tools.cas.prompt import describe
from physlab.tools.cas.run import SystemUnavailable, execute, execute_sync
from physlab.tools.cas.systems import LANGUAGES, SYSTEMS, CasSystem, Example, check_language, language_for_path

__all__ = ["LANGUAGES", "SYSTEMS", "CasSystem", "Example", "SystemStatus", "SystemUnavailable", "available_systems",
           "check_language", "describe", "detect", "execute", "execute_sync", "language_for_path", "system_status"]
