"""Render a prompt file's templates, in a child process that limits itself first (run as a script).

A ``--param prompt_file`` is a user's file of Jinja templates: Jinja's SandboxedEnvironment keeps it
from reaching Python, but not from looping for ever, asking for a terabyte, or doubling through keys
that refer to each other. So it is rendered here, with a CPU limit, an address-space limit and no
right to write files, and every key's text is capped; the parent kills the process after a wall
time. Imports nothing from PhysLab (only the standard library and Jinja2).

    python -I prompt_worker.py CPU_S MEMORY_MB < {"values", "jobs": [[root, leaves], ...], "max_chars"}

Writes one JSON object to stdout: ``{"texts"}`` (one per job) or ``{"error"}`` (one line naming the key).
"""

import json
import resource
import sys


def limit(cpu_s: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Refused(Exception):
    """One line saying why the file does not render."""


def render(values: dict, leaves: dict, root: str, max_chars: int) -> str:
    from jinja2 import StrictUndefined, TemplateError, meta
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(undefined=StrictUndefined)  # no loader: {% include %} reads no file
    values = {**values, **leaves}  # the pipeline's leaves win, as in CritPt's renderer
    done: dict = {}

    def resolve(key: str, stack: tuple) -> object:
        if key in done:
            return done[key]
        value = values[key]
        if not isinstance(value, str) or key in leaves:
            done[key] = value
            return value
        try:
            refs = meta.find_undeclared_variables(env.parse(value))
            context = {}
            for ref in sorted(refs):
                if ref in stack or ref == key:
                    raise Refused(f"template key {key} refers to itself ({' -> '.join((*stack, key, ref))})")
                if ref in values:
                    context[ref] = resolve(ref, (*stack, key))
            out, size = [], 0
            for piece in env.from_string(value).generate(context):
                size += len(piece)
                if size > max_chars:
                    raise Refused(f"template key {key} renders to more than {max_chars:,} characters")
                out.append(piece)
            done[key] = "".join(out)
        except TemplateError as exc:
            line = getattr(exc, "lineno", None)  # a syntax error has one, an undefined name not
            where = f" (line {line})" if line else ""
            raise Refused(f"template key {key}: {exc.message}{where}") from None
        except TypeError as exc:
            if "loader" in str(exc):
                raise Refused(f"template key {key}: {{% include %}} and {{% import %}} read no file in a prompt "
                              "file (IMPORTS brings in the files beside it)") from None
            raise Refused(f"template key {key}: {exc}") from None
        except (ValueError, ArithmeticError, LookupError, AttributeError) as exc:
            raise Refused(f"template key {key}: {type(exc).__name__}: {str(exc)[:200]}") from None
        return done[key]

    return str(resolve(root, ()))


def main() -> int:
    cpu_s, memory_mb = (int(a) for a in sys.argv[1:3])
    limit(cpu_s, memory_mb)
    job = json.loads(sys.stdin.buffer.read())
    result: dict[str, object]
    try:
        result = {"texts": [render(job["values"], leaves, root, job["max_chars"]) for root, leaves in job["jobs"]]}
    except Refused as exc:
        result = {"error": str(exc)}
    except MemoryError:
        result = {"error": f"the template needs more than {memory_mb} MB to render"}
    except RecursionError:
        result = {"error": "the template nests too deeply to render"}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
