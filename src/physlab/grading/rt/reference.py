"""Evaluate a reference answer in the template's names (trusted stage only; never with candidate
code in the process).

* ``python``: assignments in the template's names (CritPt ``answer_only_code``), an expression, or
  a full ``def answer(...)``. Assignments replace the template's ``X = ...`` placeholders inside its
  own ``answer`` function, which is then called with the parameters as SymPy symbols carrying the
  template's assumptions -- so code before/after the blanks and the template's ``return`` apply.
* ``number``: a numeric literal (``0.785``, ``1/3``, ``2.5e3``).
* ``latex``: parsed with latex2sympy2_extended after a clean-up (``$``, ``\\boxed``, ``\\left``,
  ``x =`` prefixes, ``m_e`` -> ``m_{e}``); math-verify's parser only as a fallback, because it
  mis-reads juxtaposed symbols (``\\alpha c`` -> ``alpha``).

Float literals in the reference are recorded with their number of significant digits, so that a
short decimal reference (``0.785``) is matched to its stated precision.
"""

import ast
import re

from . import tree as T


def sig_digits(literal):
    """Significant digits written in a decimal literal ('0.0123' -> 3, '1.50' -> 3, '2.5e3' -> 2)."""
    mant = re.split(r"[eE]", literal.strip().lstrip("+-"))[0]
    digits = mant.replace(".", "").lstrip("0")
    return max(len(digits), 1)


def float_literals(source):
    """{repr(float): significant digits} for every float literal in Python source."""
    out = {}
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
    s = text.strip()
    try:
        return sp.Integer(int(s))
    except ValueError:
        pass
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        return sp.Float(s, max(sig_digits(s), 15))
    return sp.sympify(s, rational=False)  # '1/3', '2*pi': trusted problem file


_LATEX_DROP = re.compile(r"\\(?:displaystyle|left|right|big|Big|bigg|Bigg|,|;|!|:|quad|qquad)(?![A-Za-z])")


def clean_latex(s):
    s = s.strip().strip("$").strip()
    s = re.sub(r"^\\\[|\\\]$", "", s).strip()
    m = re.search(r"\\boxed\s*\{", s)
    if m:  # the content of the last \boxed{...}
        start = [mm.end() for mm in re.finditer(r"\\boxed\s*\{", s)][-1]
        depth, j = 1, start
        while j < len(s) and depth:
            depth += {"{": 1, "}": -1}.get(s[j], 0)
            j += 1
        s = s[start:j - 1]
    s = _LATEX_DROP.sub(" ", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\cdot", " \\cdot ")
    s = re.sub(r"\\(?:text|mathrm|operatorname)\s*\{\s*\}", "", s)
    s = re.sub(r"_\s*([A-Za-z0-9])(?![A-Za-z0-9{])", r"_{\1}", s)  # m_e -> m_{e}
    s = re.sub(r"_([A-Za-z0-9])(?=[A-Za-z0-9])", r"_{\1}", s)
    # "x = <rhs>": keep the right-hand side of a definition
    parts = re.split(r"(?<![<>!\\])=(?!=)", s)
    if len(parts) == 2 and re.fullmatch(r"\s*[A-Za-z\\{}_^0-9 ,()]*\s*", parts[0]):
        s = parts[1]
    return s.strip().rstrip(".").strip()


def latex_reference(sp, text):
    s = clean_latex(text)
    try:
        from latex2sympy2_extended import latex2sympy
        from latex2sympy2_extended.latex2sympy2 import ConversionConfig
        return latex2sympy(s, conversion_config=ConversionConfig(lowercase_symbols=False))
    except Exception as first:  # noqa: BLE001 - fall back to math-verify's parser
        try:
            from math_verify import parse
            found = [x for x in parse(f"${s}$") if not isinstance(x, str)]
        except Exception:  # noqa: BLE001
            found = []
        if not found:
            raise ValueError(f"cannot parse the LaTeX reference ({type(first).__name__})") from None
        return found[0]


def detect_format(text):
    s = text.strip()
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        return "number"
    if "\\" in s or "$" in s:
        return "latex"
    return "python"


def build_reference(job):
    """Evaluate the job's reference; returns {"tree": ..., "literals": {...}} (JSON-able)."""
    import sympy as sp
    text = job["reference"]
    fmt = job.get("format") or detect_format(text)
    params = job["params"]
    if fmt == "number":
        value = number_reference(sp, text)
        literals = {}
        if isinstance(value, sp.Float):
            literals[repr(float(value))] = sig_digits(text)
    elif fmt == "latex":
        value = latex_reference(sp, text)
        literals = {}
        mants = re.findall(r"\d+\.\d+", text)
        if len(mants) == 1 and isinstance(value, sp.Float):
            literals[repr(float(value))] = sig_digits(mants[0])
    else:
        value = python_reference(sp, text, job.get("template"), job.get("function", "answer"), params)
        literals = float_literals(text)
    return {"tree": T.to_tree(value, sp), "literals": literals}
