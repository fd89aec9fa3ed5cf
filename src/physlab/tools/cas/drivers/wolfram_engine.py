"""Runs ``main.wl`` with a Wolfram Engine through wolframclient, in this (sandboxed) Python, the way
the Mathics3 driver does: each top-level expression in turn, the value of every one not ending in
``;`` printed in InputForm, Print[] output and messages where they happen. The kernel writes all of
it to a file of the run, printed here at the end. Needs a licensed engine readable inside the
sandbox; not exercised by PhysLab's tests (no Wolfram Engine on CI)."""

import json
import sys

PROGRAM = "main.wl"
OUT = "physlab-wl-out.txt"

RUN = """
Module[{out = OpenWrite["%(out)s"], held},
  Block[{$Output = {out}, $Messages = {out}},
    held = ReadList["%(program)s", Hold[Expression]];
    If[held === $Failed, WriteString[out, "Syntax: main.wl could not be read\\n"]; Close[out]; Return[1]];
    Scan[Function[h, With[{value = ReleaseHold[h]},
      If[value =!= Null, WriteString[out, ToString[value, InputForm], "\\n"]]]], held]];
  Close[out]; 0]
"""


def main() -> None:
    from wolframclient.evaluation import WolframLanguageSession
    from wolframclient.language import wlexpr

    with open("physlab-cas.json", encoding="utf-8") as fh:
        kernel = json.load(fh).get("kernel") or None
    with WolframLanguageSession(kernel) as session:
        status = session.evaluate(wlexpr(RUN % {"out": OUT, "program": PROGRAM}))
    try:
        with open(OUT, encoding="utf-8") as fh:
            sys.stdout.write(fh.read())
    except OSError:
        pass
    sys.exit(status if isinstance(status, int) else 1)


if __name__ == "__main__":
    main()
