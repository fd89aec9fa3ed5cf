"""Runs ``main.wl`` with Mathics3, an open interpreter of the Wolfram Language, in this (sandboxed)
Python. Like a script: each top-level expression is evaluated in turn and the value of every one
not ending in ``;`` is printed in InputForm; Print[] output and messages appear where they happen.
A syntax error, or an expression Mathics3 itself fails on (a Python exception inside it, reported in
one line), makes the exit status 1; the expressions after it still run."""

import sys

PROGRAM = "main.wl"


def _matplotlib_version_without_stat() -> None:
    """Mathics3 reads ``matplotlib.__version__``, which matplotlib computes by stat-ing a file
    beside its install; where that install sits under a directory the sandbox cannot traverse (a
    root-only home, the rlimit fallback) the stat raises. Setting the attribute from the package's
    metadata answers the same question without the stat."""
    try:
        import importlib.metadata

        import matplotlib
    except Exception:  # noqa: BLE001 - no matplotlib (or a broken one): Mathics3 is left to say so itself
        return
    if "__version__" not in vars(matplotlib):
        try:
            matplotlib.__version__ = importlib.metadata.version("matplotlib")
        except Exception:  # noqa: BLE001 - no metadata: matplotlib keeps its own way of finding it
            pass


def main() -> None:
    _matplotlib_version_without_stat()
    from mathics.core.load_builtin import import_and_load_builtins

    import_and_load_builtins()
    from mathics.core.definitions import Definitions
    from mathics.core.evaluation import Evaluation, Message, Output
    from mathics.core.expression import Expression
    from mathics.core.parser import MathicsFileLineFeeder
    from mathics.core.symbols import Symbol, SymbolNull

    failed = []

    class Printed(Output):
        def max_stored_size(self, settings):
            return None  # keep no history

        def out(self, out):
            if isinstance(out, Message) and str(out.symbol).endswith("Syntax"):
                failed.append(out)
            print(str(out), flush=True)

    definitions = Definitions(add_builtin=True)
    to_string, unevaluated, input_form = (Symbol("System`" + n) for n in ("ToString", "Unevaluated", "InputForm"))
    with open(PROGRAM, encoding="utf-8") as fh:
        feeder = MathicsFileLineFeeder(fh)
        while not feeder.empty():
            evaluation = Evaluation(definitions, output=Printed(), format="unformatted")
            query = evaluation.parse_feeder(feeder)
            if query is None:
                continue
            try:
                value = evaluation.evaluate(query).last_eval
                if value is None or value is SymbolNull or value == SymbolNull:
                    continue
                shown = Evaluation(definitions, output=Printed(), format="unformatted").evaluate(
                    Expression(to_string, Expression(unevaluated, value), input_form)).last_eval
            except Exception as exc:  # noqa: BLE001 - a bug of the interpreter, not of the program
                failed.append(exc)
                print(f"Mathics3 failed on this expression ({type(exc).__name__}: {exc}); going on with the next",
                      file=sys.stderr, flush=True)
                continue
            print(getattr(shown, "value", shown), flush=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
