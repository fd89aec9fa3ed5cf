"""Evaluate a reference answer in the template's names (trusted stage only; never with candidate
code in the process).

* ``python``: assignments in the template's names (CritPt ``answer_only_code``), an expression, or
  a full ``def answer(...)``. Assignments replace the template's ``X = ...`` placeholders inside its
  own ``answer`` function, which is then called with the parameters as SymPy symbols carrying the
  template's assumptions -- so code before/after the blanks and the template's ``return`` apply.
* ``number``: a numeric literal (``0.785``, ``1/3``, ``2.5e3``).
* ``latex``: each boxed answer parsed by ``latex.parse_answer`` (physics-aware; no fallback parser:
  a reference that cannot be read is an error in the problem file).

Float literals in the reference are recorded with their number of significant digits, so that a
short decimal reference (``0.785``) is matched to its stated precision.
"""

import ast
import re
from typing import Any

from . import tree as T


def sig_digits(literal):
    """Significant digits written in a decimal literal ('0.0123' -> 3, '1.50' -> 3, '2.5e3' -> 2)."""
    mant = re.split(r"[eE]", literal.strip().lstrip("+-"))[0]
    digits = mant.replace(".", "").lstrip("0")
    return max(len(digits), 1)


def float_literals(source):
    """{repr(float): significant digits} for every float literal in Python source."""
    out: dict[str, Any] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is float:
            seg = ast.get_source_segment(source, node) or repr(node.value)
            out[repr(node.value)] = sig_digits(seg)
            out[repr(-node.value)] = sig_digits(seg)
    return out


def _is_placeholder(stmt):
    return (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Constant)
            and stmt.value.value is Ellipsis)


def _targets(stmt):
    ts = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [n.id for t in ts for n in ast.walk(t) if isinstance(n, ast.Name)]


def _namespace(sp, preamble):
    ns = {name: getattr(sp, name) for name in dir(sp) if not name.startswith("_")}
    ns.update({"sp": sp, "sympy": sp, "__name__": "__physlab_reference__"})
    try:
        import math

        import numpy
        ns.update({"np": numpy, "numpy": numpy, "math": math})
    except ImportError:  # pragma: no cover
        pass
    if preamble is not None:
        try:
            exec(compile(preamble, "<template>", "exec"), ns)  # trusted: the problem's template
        except Exception:  # noqa: BLE001 - a template preamble that fails still leaves sp/sympy
            pass
    return ns


def _preamble(template_tree):
    body = [s for s in template_tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


def python_reference(sp, reference, template, function, params):
    """Value of a Python reference. ``params``: [[param, declared name, assumptions], ...]."""
    ref_tree = ast.parse(reference)
    args = [sp.Symbol(declared, **ass) for _, declared, ass in params]
    tpl_tree = ast.parse(template) if template else None
    ns = _namespace(sp, _preamble(tpl_tree) if tpl_tree else None)
    for (param, _, _), sym in zip(params, args):
        ns[param] = sym
    defs = [s for s in ref_tree.body if isinstance(s, ast.FunctionDef)]
    if defs:  # a full function: answer / real_answer / the only def
        exec(compile(ref_tree, "<reference>", "exec"), ns)
        names = [function, "real_answer", "answer"] + [d.name for d in defs]
        fn = next(ns[n] for n in names if callable(ns.get(n)))
        return fn(*args)
    fdef = None
    if tpl_tree is not None:
        fdef = next((s for s in tpl_tree.body if isinstance(s, ast.FunctionDef) and s.name == function), None)
    stmts = list(ref_tree.body)
    if fdef is None:
        if len(stmts) == 1 and isinstance(stmts[0], ast.Expr):
            return eval(compile(ast.Expression(stmts[0].value), "<reference>", "eval"), ns)
        exec(compile(ref_tree, "<reference>", "exec"), ns)
        assigned = [n for s in stmts if isinstance(s, (ast.Assign, ast.AnnAssign)) for n in _targets(s)]
        values = [ns[n] for n in dict.fromkeys(assigned)]
        return values[0] if len(values) == 1 else tuple(values)
    holes = [n for s in fdef.body if _is_placeholder(s) for n in _targets(s)]
    if len(stmts) == 1 and isinstance(stmts[0], ast.Expr):
        expr = stmts[0].value
        if len(holes) == 1:
            stmts = [ast.Assign(targets=[ast.Name(holes[0], ast.Store())], value=expr, lineno=1)]
        elif len(holes) > 1:
            target = ast.Tuple([ast.Name(h, ast.Store()) for h in holes], ast.Store())
            stmts = [ast.Assign(targets=[target], value=expr, lineno=1)]
        else:
            stmts = [ast.Return(value=expr)]
    body, inserted = [], False
    for s in fdef.body:
        if _is_placeholder(s):
            if not inserted:
                body.extend(stmts)
                inserted = True
            continue
        body.append(s)
    if not inserted:
        at = max((i for i, s in enumerate(body) if isinstance(s, ast.Return)), default=len(body))
        body[at:at] = stmts
    fdef = ast.FunctionDef(name="__physlab_reference", args=fdef.args, body=body, decorator_list=[],
                           returns=None, type_comment=None, lineno=1)
    module = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
    exec(compile(module, "<reference>", "exec"), ns)
    return ns["__physlab_reference"](*args)


def number_reference(sp, text):
    """A number reference: an integer, a decimal or a fraction read strictly; anything else
    (``2*pi``) is evaluated as a Python expression, as a Python reference is (never by sympify)."""
    s = text.strip()
    if re.fullmatch(r"[+-]?\d+", s):
        return sp.Integer(int(s))
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        return sp.Float(s, max(sig_digits(s), 15))
    m = re.fullmatch(r"([+-]?\d+)\s*/\s*(\d+)", s)
    if m and int(m.group(2)):
        return sp.Rational(int(m.group(1)), int(m.group(2)))
    return python_reference(sp, s, None, "answer", [])


def detect_format(text):
    s = text.strip()
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        return "number"
    if "\\" in s or "$" in s:
        return "latex"
    return "python"


def return_names(template, function):
    """The names the template's answer function returns (``return (z, r_isco)`` -> [z, r_isco]):
    the quantities the problem asks for, which a written answer may label its boxes with."""
    try:
        tree = ast.parse(template or "")
    except SyntaxError:
        return []
    fdef = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == function), None)
    rets = [n for n in ast.walk(fdef) if isinstance(n, ast.Return)] if fdef else []
    if len(rets) != 1 or rets[0].value is None:
        return []
    v = rets[0].value
    if isinstance(v, ast.Name):
        return [v.id]
    if isinstance(v, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in v.elts):
        return [e.id for e in v.elts if isinstance(e, ast.Name)]
    return []


def _part(value_tree, label=None, labels=None, literals=None, text=""):
    return {"label": label, "lhs": None, "value": value_tree, "alts": [], "unit": None, "unit_marked": True,
            "unsplit": None, "text": text, "raw": text, "paren_pair": False, "literals": literals or {},
            "labels": labels or [], "many": bool(labels and len(labels) > 1)}


def build_reference(job):
    """The job's reference as parts (JSON-able): ``{"parts": [...]}``. A LaTeX reference gives one
    part per boxed answer (the host extracted them into ``reference_answers``); HiPhO items one per
    answer, with its type, unit, points; a Python or number reference one part."""
    import sympy as sp

    from .latex import parse_answer

    hipho = job.get("hipho")
    if hipho:
        return {"parts": [_hipho_part(sp, parse_answer, hipho, i) for i in range(len(hipho["answers"]))]}
    text = job["reference"]
    fmt = job.get("format") or detect_format(text)
    if job.get("options") is not None:
        return _options_reference(parse_answer, job)
    if fmt == "latex":
        parts = []
        for answer in job.get("reference_answers") or [text]:
            res = parse_answer(answer)
            if not res["ok"]:
                raise ValueError(f"the LaTeX reference cannot be read: {res['error']}")
            parts.extend(res["parts"])
        return {"parts": parts}
    params = job["params"]
    names = return_names(job.get("template"), job.get("function", "answer"))
    if fmt == "number":
        value = number_reference(sp, text)
        literals = {repr(float(value)): sig_digits(text)} if isinstance(value, sp.Float) else {}
    else:
        value = python_reference(sp, text, job.get("template"), job.get("function", "answer"), params)
        literals = float_literals(text)
    tree = T.to_tree(value, sp)
    shown = sp.sstr(value, full_prec=False) if isinstance(value, sp.Basic) else str(value)
    return {"parts": [_part(tree, label=names[0] if len(names) == 1 else None,
                            labels=names if len(names) > 1 else None, literals=literals, text=shown[:300])]}


def _options_reference(parse_answer, job):
    """A problem with options: each option's content parsed (None when it is words, not math), and
    the reference's own parts unless it names its letter (``(a)`` is no math)."""
    options = {k: (res["parts"] if res["ok"] and len(res["parts"]) == 1 else None)
               for k, res in ((k, parse_answer(v)) for k, v in job["options"].items())}
    parts = []
    if not job.get("reference_letters") and not job.get("reference_wording"):
        for answer in job.get("reference_answers") or [job["reference"]]:
            res = parse_answer(answer)
            if not res["ok"]:
                raise ValueError(f"the LaTeX reference cannot be read: {res['error']} (nor does it name an option)")
            parts.extend(res["parts"])
    return {"parts": parts, "options": options}


def reference_value(item):
    """One reference's value as a tree (``problems check``): ``item`` holds ``reference``,
    ``format`` (python | number), ``template``, ``function`` and ``params``."""
    import sympy as sp

    if item.get("format") == "number":
        value = number_reference(sp, item["reference"])
    else:
        value = python_reference(sp, item["reference"].strip(), item.get("template"),
                                 item.get("function", "answer"), item.get("params") or [])
    return T.to_tree(value, sp)


def _hipho_part(sp, parse_answer, hipho, i):
    """One HiPhO answer. An answer the parser cannot read is compared as text (its marking scheme
    is a human's; the item stays gradable)."""
    raw = hipho["answers"][i]
    kind = (hipho["types"][i] if i < len(hipho["types"]) else "Expression") or "Expression"
    unit = hipho["units"][i] if i < len(hipho["units"]) else None
    points = hipho["points"][i] if i < len(hipho["points"]) else 1.0
    res = parse_answer(raw, [unit] if unit else [])
    if res["ok"] and len(res["parts"]) == 1:
        part = dict(res["parts"][0])
    elif res["ok"]:
        part = dict(res["parts"][-1])
    else:
        part = {"label": None, "lhs": None, "value": {"t": "str", "v": raw}, "alts": [], "unit": None,
                "unit_marked": True, "unsplit": None, "text": raw, "raw": raw, "paren_pair": False,
                "literals": {}, "text_only": True}
    numeric = "numerical" in kind.lower()
    part.update(answer_type=kind, points=points, unit=unit or part.get("unit"), hipho=True,
                range=numeric and part["value"].get("f") == "Interval",
                rtol=hipho.get("rtol", 0.01) if numeric else None)
    if unit and not part.get("unit_text_shown"):
        from .units import pretty
        shown = pretty(unit)
        if not part["text"].endswith(shown):
            part["text"] = f"{part['text']} {shown}"
    return part
