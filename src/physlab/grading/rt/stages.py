"""The two sandbox entry points. ``main()`` reads ``job.json`` from the working directory.

Stage 1 (``mode: candidate``) runs UNTRUSTED code and nothing else: exec the candidate, call its
answer function with the template's parameters as SymPy symbols, serialize the result to a safe
tree and write ``result.json``. It never sees the reference.

Stage 2 (``mode: grade | classes | points | latex``) runs trusted code only: evaluate the reference,
rebuild answers from their trees and compare. It prints one line ``RESULT_MARK <json>``, and before
comparing, ``REFERENCE_MARK`` once the reference is evaluated: a stage 2 that dies after that mark
died on the candidate's answer (an invalid verdict), before it on the problem file.
"""

import io
import json
import os
import sys
from typing import Any

RESULT_MARK = "@@physlab-grading-result@@"
REFERENCE_MARK = "@@physlab-reference-evaluated@@"
RESULT_FILE = "result.json"


def _write(result, path=RESULT_FILE):
    with open(path, "w") as f:
        json.dump(result, f)


def _invalid(reason):
    return {"ok": False, "reason": reason[:500]}


def _err_text(exc):
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:300] + "..."


class _Sink(io.TextIOBase):
    """Swallows the candidate's prints (bounded work, nothing kept)."""

    def writable(self):
        return True

    def write(self, s):
        return len(s)


def run_candidate(job):
    """Stage 1: the candidate's answer as a tree, or the reason it has none."""
    import inspect

    from . import tree as T

    code = job.get("code")
    real_stdout, real_stderr = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = _Sink()
    try:
        import sympy as sp
        if code is None:
            return written_answer(job)
        try:
            compiled = compile(code, "answer.py", "exec")
        except SyntaxError as exc:
            return _invalid(f"syntax error in the candidate code (line {exc.lineno}: {exc.msg})")
        except (ValueError, MemoryError, RecursionError) as exc:
            return _invalid(f"the candidate code does not compile ({_err_text(exc)})")
        ns = {"__name__": "__candidate__", "__builtins__": __builtins__}
        try:
            exec(compiled, ns)
        except BaseException as exc:  # noqa: BLE001 - incl. SystemExit, KeyboardInterrupt
            return _invalid(f"the candidate code raised {_err_text(exc)} when run")
        name = job.get("function") or "answer"
        fn = ns.get(name)
        if not callable(fn):
            return _invalid(f"the candidate code does not define a function {name}()")
        params = job.get("params")
        if params is None:  # no template: the candidate's own parameters, as plain symbols
            try:
                names = [p.name for p in inspect.signature(fn).parameters.values()
                         if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            except (TypeError, ValueError):
                names = []
            params = [[n, n, {}] for n in names]
        args = [sp.Symbol(declared, **ass) for _, declared, ass in params]
        try:
            inspect.signature(fn).bind(*args)
        except TypeError:
            want = ", ".join(p for p, _, _ in params)
            return _invalid(f"wrong arity: {name}() must take {len(params)} argument(s) ({want})")
        except ValueError:
            pass
        try:
            value = fn(*args)
        except BaseException as exc:  # noqa: BLE001
            return _invalid(f"{name}() raised {_err_text(exc)}")
        return _serialize(T, sp, value, name)
    finally:
        sys.stdout, sys.stderr = real_stdout, real_stderr


def _serialize(T, sp, value, name):
    if value is None:
        return _invalid(f"{name}() returned None (missing return?)")
    if value is Ellipsis:
        return _invalid("the template is not filled in (the answer is still ...)")
    if type(value) is str:
        return _invalid(f"{name}() returned a string, not a SymPy expression or number")
    try:
        tree = T.to_tree(value, sp)
    except T.TreeError as exc:
        return _invalid(str(exc))
    except BaseException as exc:  # noqa: BLE001 - hostile objects
        return _invalid(f"the answer could not be read ({_err_text(exc)})")
    if T.contains_ellipsis(tree):
        return _invalid("the template is not filled in (the answer still contains ...)")
    return {"ok": True, "tree": tree}


MAX_BOXES = 20


def written_answer(job):
    """Stage 1 for a written answer: parse each box (each under its own killable step) and pick
    the final answer's value as the candidate's tree (for equivalence classes and fingerprints)."""
    from . import tree as T
    from .guard import StepFailed, StepTimeout, run_guarded
    from .latex import parse_answer
    from .units import may_have_unit, registry

    answers = list(job.get("answers") or [])[-MAX_BOXES:]
    skipped = len(job.get("answers") or []) - len(answers)
    final = [k - skipped for k in job.get("final") or [] if k >= skipped] or [len(answers) - 1]
    hints = job.get("unit_hints") or []
    if hints or any(may_have_unit(t) for t in answers):
        registry()  # once here, inherited by every step below
    boxes = []
    for text in answers:
        try:
            boxes.append(run_guarded(parse_answer, job.get("step_timeout", 5.0) * 2, text, hints))
        except StepTimeout:
            boxes.append({"ok": False, "error": "reading the answer took too long", "parts": []})
        except StepFailed as exc:
            boxes.append({"ok": False, "error": f"the answer could not be read ({exc})", "parts": []})
    if not boxes:
        return _invalid("no answer found (no python block and no final answer)")
    last = boxes[final[-1]]
    chose = job.get("options") and (job.get("letters") or job.get("wording"))
    written = {"boxes": boxes, "final": final, "how": job.get("how", "")}
    if job.get("options"):  # the host's reading of the letters, for stage 2 (checked there as data)
        written.update(letters=job.get("letters"), wording=job.get("wording"), has_content=bool(job.get("has_content")))
    if not last.get("ok") and chose:
        # an option named (or repeated word for word) beside words that are not math: the letter answers
        return {"ok": True, "tree": {"t": "str", "v": job.get("letters") or job.get("wording")}, "written": written}
    if not last.get("ok"):
        return _invalid(f"the final answer could not be read: {last.get('error')}")
    values = [p["value"] for k in final if boxes[k].get("ok") for p in boxes[k]["parts"]]
    tree = values[-1] if len(values) == 1 or len(final) == 1 else {"t": "tuple", "a": values}
    if len(boxes[final[-1]]["parts"]) > 1 and len(final) == 1:
        tree = {"t": "tuple", "a": [p["value"] for p in last["parts"]]}
    if T.contains_ellipsis(tree):
        return _invalid("the final answer is not filled in")
    return {"ok": True, "tree": tree, "written": written}


def warm_up(job=None):
    """Load SymPy's lazily imported machinery (and the LaTeX parser and pint registry when the job
    needs them) once in the stage-2 parent, so the forked step children inherit them instead of
    each paying for it (a no-op when the worker already did)."""
    import sympy as sp

    from .units import may_have_unit, registry

    x = sp.Symbol("x")
    e = (x + 1) ** 2 / (x - sp.Rational(1, 3)) - sp.sqrt(x) * sp.exp(x) * sp.sin(x) + sp.Float("0.5")
    sp.expand(e)
    sp.cancel(sp.together(e))
    e.evalf(30, subs={x: sp.Float("0.3", 40)})
    job = job or {}
    ref = job.get("reference") or ""
    if job.get("format") == "latex" or job.get("written") or job.get("hipho") or "\\" in ref or "$" in ref:
        from .latex import parse_answer
        parse_answer(r"\frac{1}{2} m_e c^2")
    if job.get("hipho") or may_have_unit(ref) or (job.get("written") and may_have_unit(json.dumps(job["written"]))):
        registry()


def run_trusted(job, on_reference=None):
    """Stage 2: compare / classify / fingerprint. Returns a JSON-able dict. ``on_reference()`` is
    called once the reference is evaluated (``grade``)."""
    warm_up(job)
    from . import compare as C
    from .guard import StepFailed, StepTimeout, run_guarded

    opts = C.Options(symbols=job.get("symbols"), rtol=job.get("rtol"),
                     step_timeout=job.get("step_timeout", 5.0), seed=job.get("seed", 0),
                     n_points=job.get("n_points", C.N_POINTS), precision=job.get("precision", "stated"))
    mode = job["mode"]
    if mode == "references":
        return {"values": [_reference_value(item, job.get("reference_timeout", 30.0)) for item in job["items"]]}
    if mode == "grade":
        return grade(job, opts, on_reference)
    if mode == "latex":  # the answer as math, reference-free (a problem without a reference answer)
        return {"latex": answer_latex(job["trees"][0], opts.step_timeout)}
    if mode == "classes":
        classes: list[Any] = []
        for i, t in enumerate(job["trees"]):
            for cls in classes:
                if C.compare(t, job["trees"][cls[0]], opts).equal:
                    cls.append(i)
                    break
            else:
                classes.append([i])
        return {"classes": classes}
    if mode == "points":
        out = []
        for t in job["trees"]:
            leaves = _leaves(t)
            values = []
            for leaf in leaves:
                try:
                    values.append(run_guarded(C.step_points, opts.step_timeout * 2,
                                              {"c": leaf, "symbols": opts.symbols, "params": job["params_names"],
                                               "seed": opts.seed, "n_points": opts.n_points}))
                except (StepTimeout, StepFailed):
                    values.append([None] * opts.n_points)
            # point-major: for each point, the values of every leaf
            out.append([values[j][i] for i in range(opts.n_points) for j in range(len(leaves))])
        return {"values": out}
    return {"error": f"unknown mode {mode!r}"}


def _reference_value(item, timeout):
    """``problems check``: one reference's value as a tree, or why it has none (each in a killable
    child: the problem file's code runs there)."""
    from .guard import StepFailed, StepTimeout, run_guarded
    from .reference import reference_value

    try:
        return {"tree": run_guarded(reference_value, timeout, item)}
    except StepTimeout:
        return {"error": f"did not finish in {timeout:g} s"}
    except StepFailed as exc:
        return {"error": str(exc)}


def grade(job, opts, on_reference=None):
    """Stage 2 of ``grade``: the reference as parts, the candidate's answer for each, compared.
    A comparison that fails on the candidate's data is an invalid verdict, never an error."""
    from .guard import StepFailed, StepTimeout, run_guarded
    from .reference import build_reference

    try:
        ref = run_guarded(build_reference, job.get("reference_timeout", 30.0), job)
    except (StepTimeout, StepFailed) as exc:
        return {"error": f"the reference answer could not be evaluated: {exc}"}
    if on_reference is not None:
        on_reference()
    try:
        out = _compare_parts(job, opts, ref["parts"], ref.get("options"))
    except Exception as exc:  # noqa: BLE001 - the answer's doing: the reference evaluated fine
        out = {"verdict": "invalid", "method": "compare", "compared": {},
               "reason": f"the answer could not be compared with the reference ({type(exc).__name__})"}
    if not job.get("written"):  # a written answer is LaTeX already (the run's ANSWER.md)
        latex = answer_latex(job["trees"][0], opts.step_timeout)
        if latex:
            out["candidate_latex"] = latex
    return out


MAX_LATEX = 20_000


def step_latex(tree):
    """The answer's value as LaTeX: rebuilt from its tree (data, never code), then ``sympy.latex``."""
    import sympy as sp

    from . import tree as T

    return sp.latex(T.from_tree(tree, sp))


def answer_latex(tree, timeout):
    """``step_latex`` in a killable child (a rebuilt value can be large); "" when it fails, runs
    over ``timeout`` or is longer than MAX_LATEX (the page then shows the code alone)."""
    from .guard import StepFailed, StepTimeout, run_guarded

    try:
        text = run_guarded(step_latex, timeout, tree)
    except (StepTimeout, StepFailed):
        return ""
    return text if isinstance(text, str) and len(text) <= MAX_LATEX else ""


def _compare_parts(job, opts, parts, options=None):
    from . import compare as C, written as W

    if job.get("written"):
        picked = W.pick(parts, job["written"])
    else:  # an answer from code: one value, no label
        from . import tree as T

        def code_part(value):
            return {"label": None, "lhs": None, "value": value, "alts": [], "unit": None, "unit_marked": True,
                    "unsplit": None, "raw": "", "paren_pair": False, "literals": {}, "text": T.show(value)}

        tree = job["trees"][0]
        if len(parts) > 1 and C._kind(tree) == "seq":  # a tuple from code against several boxed answers
            picked = [(0, code_part(e)) for e in tree["a"][:len(parts)]]
        else:
            picked = [(0, code_part(tree))]
        picked += [None] * (len(parts) - len(picked))

    def opts_for(part):
        o = C.Options(symbols=opts.symbols, rtol=part.get("rtol") if part.get("rtol") is not None else opts.rtol,
                      step_timeout=opts.step_timeout, literals=part.get("literals"), seed=opts.seed,
                      n_points=opts.n_points, precision_also=bool(part.get("hipho")), precision=opts.precision)
        return o

    if options is not None and job.get("written"):
        out = W.grade_options(job, parts, options, opts_for)
        if out is not None:
            return out
    return W.grade_parts(picked, parts, opts_for, hipho=bool(job.get("hipho")), choices=bool(job.get("choices")))


def _leaves(t):
    """Scalar leaves of a tree in a stable order (dicts by key label)."""
    from .compare import _key_label, _kind
    k = _kind(t)
    if k in ("seq", "set", "matrix"):
        return [x for e in t["a"] for x in _leaves(e)]
    if k == "dict":
        return [x for _, v in sorted(t["items"], key=lambda kv: _key_label(kv[0])) for x in _leaves(v)]
    return [t]


def main():
    sys.setrecursionlimit(10_000)
    with open("job.json") as f:
        job = json.load(f)
    if job["mode"] == "candidate":
        out_path = os.path.abspath(RESULT_FILE)  # before the candidate can chdir
        try:
            result = run_candidate(job)
        except BaseException as exc:  # noqa: BLE001
            result = _invalid(f"the candidate could not be run ({_err_text(exc)})")
        _write(result, out_path)
        sys.stdout.flush()
        os._exit(0)  # skip interpreter teardown (candidate atexit hooks, __del__)
    def reference_evaluated():
        sys.stdout.write(REFERENCE_MARK + "\n")
        sys.stdout.flush()

    result = run_trusted(job, reference_evaluated)
    sys.stdout.write(RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()
