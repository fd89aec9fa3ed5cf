"""Grading against parts: the trusted stage-2 logic shared by every answer path.

A reference is a list of parts (one per boxed reference answer, HiPhO answer, or a Python/number
reference as one part). A candidate is the answer tree of its code (one part) or its parsed
written answers (``latex.parse_answer`` per box, in stage 1). This module

* picks the candidate's answer for each reference part: a part labelled with the quantity's name
  (``E_1 = ...``) answers that part wherever it is; the others go in order to the final group of
  boxes (or the last boxes when the final group is short); several boxes make a tuple/set when the
  reference is one;
* compares one pair: labels (a relation compares right-hand sides only when its left side names
  the asked quantity; two left sides that differ compare as equations), units (pint: converted, or
  refused when not convertible), HiPhO acceptance ranges, ``(a, b)`` read as an interval beside
  one, inequalities on one quantity as the interval they describe, approximate reference forms, a
  candidate's stated value after an exact form in free constants, then ``compare.compare``; and
  the other reading a notation allows (a percentage as that number, a lone ``e`` as Euler's number
  beside one); letters for multiple choice;
* says what it compared: the normalised reference and candidate and the method, per part.
"""

from typing import Any

from . import compare as C, tree as T
from .guard import StepFailed, StepTimeout, run_guarded
from .units import factor as unit_factor, is_offset, pretty as pretty_unit

RELATION_FNS = C.RELATIONS | {"And"}


def _is_relation(tree):
    return tree.get("t") == "fn" and tree.get("f") in RELATION_FNS


def _norm_label(name):
    return C.norm_name(name or "").replace("_", "").lower()


def _has_symbols(tree):
    return bool(tree) and bool(_free_names(tree))


def _free_names(tree):
    out, stack = set(), [tree]
    while stack:
        n = stack.pop()
        if not isinstance(n, dict):
            continue
        if n.get("t") == "sym":
            out.add(_norm_label(n.get("name")))
        stack.extend(n.get("a") or [])
    return out


# ------------------------------------------------------------------------------ picking


def pick(ref_parts, written):
    """For each reference part, the candidate part answering it: (box index, part) or
    (box index, {"error": ...}) or None when the candidate gave nothing for it."""
    boxes = written["boxes"]
    flat: list[tuple[int, dict[str, Any]]] = []  # (box index, part or {"error"}) in order
    for b, res in enumerate(boxes):
        if res.get("ok"):
            flat.extend((b, p) for p in res["parts"])
        else:
            flat.append((b, {"error": res.get("error") or "could not be read"}))
    n = len(ref_parts)
    finals = [k for k, x in enumerate(flat) if x[0] in set(written["final"])]
    if n > 1 and len(finals) == 1 and _tuple_of(flat[finals[0]][1], n):  # one box holding all the parts
        b, whole = flat[finals[0]]
        flat[finals[0]:finals[0] + 1] = [(b, dict(whole, value=v, label=None, lhs=None, text=T.show(v), alts=[]))
                                         for v in whole["value"]["a"]]
    final = [x for x in flat if x[0] in set(written["final"])]
    labels = [_norm_label(r.get("label")) for r in ref_parts]
    chosen: list[tuple[int, dict[str, Any]] | None] = [None] * n
    used = set()
    for i, lab in enumerate(labels):  # a part that names the quantity answers it, wherever it is
        if not lab:
            continue
        named = [k for k in range(len(flat)) if k not in used and _norm_label(flat[k][1].get("label")) == lab]
        # "a_c = <formula>" and "a_c = 0.3 um" both name a_c: the formula answers the formula
        fitting = [k for k in named if _has_symbols(flat[k][1].get("value")) == _has_symbols(ref_parts[i]["value"])]
        named = fitting or named
        # several reference parts with one name (v_c for r < R and for r > R) take them in order;
        # one reference part takes the last (a revised answer)
        wanted = sum(1 for j in range(i, n) if labels[j] == lab)
        named = named[-wanted:] if len(named) > wanted else named
        if named:
            chosen[i] = flat[named[0]]
            used.add(named[0])
    if n == 1 and chosen[0] is None:
        group = [k for k, x in enumerate(flat) if x in final] or [len(flat) - 1]
        ref = ref_parts[0]
        if len(group) > 1:  # several boxes side by side: one tuple (a set, a pair... or a hedge)
            chosen[0] = _combine([flat[k] for k in group], ref)
        elif flat:
            chosen[0] = flat[group[-1]]
        return chosen
    window = [k for k, x in enumerate(flat) if x in final]
    if len(window) < n:
        window = list(range(max(0, len(flat) - n), len(flat)))
    free = [k for k in window if k not in used]
    # in order, a formula to a formula and a number to a number first; then whatever is left
    for fit_only in (True, False):
        for i in range(n):
            if chosen[i] is not None:
                continue
            fits = [k for k in free if not fit_only or ("error" not in flat[k][1] and _has_symbols(
                flat[k][1].get("value")) == _has_symbols(ref_parts[i]["value"]))]
            if fits:
                chosen[i] = flat[fits[0]]
                free.remove(fits[0])
    return chosen


def _tuple_of(part, n):
    return "error" not in part and C._kind(part["value"]) == "seq" and len(part["value"]["a"]) == n


def _combine(items, ref):
    """Several boxes as one tuple (a set when the reference is one); labelled boxes in the order of
    the reference's names when it has them."""
    bad = [p for _, p in items if "error" in p]
    if bad:
        return items[-1][0], bad[0]
    parts = [p for _, p in items]
    names = [_norm_label(x) for x in ref.get("labels") or []]
    if names and all(_norm_label(p.get("label")) in names for p in parts) and len(parts) == len(names):
        parts.sort(key=lambda p: names.index(_norm_label(p.get("label"))))
    kind = "set" if C._kind(ref["value"]) == "set" else "tuple"
    value = {"t": kind, "a": [p["value"] for p in parts]}
    units = {p.get("unit") for p in parts}
    return items[-1][0], {"label": None, "lhs": None, "value": value, "alts": [], "raw": ", ".join(p["raw"] for p in parts),
                          "unit": units.pop() if len(units) == 1 else None, "unit_marked": True, "unsplit": None,
                          "text": ", ".join(p["text"] for p in parts), "paren_pair": False, "literals": {}}


# ----------------------------------------------------------------------------- comparing


class PartResult:
    def __init__(self, correct, reason, method, candidate="", reference=""):
        self.correct, self.reason, self.method = correct, reason, method
        self.candidate, self.reference = candidate, reference


def compare_part(cand, ref, opts, *, other_labels=(), answer_type=""):
    """One candidate part against one reference part -> PartResult (correct True/False, or None
    when the candidate's answer could not be read)."""
    ref_text = ref.get("text", "")
    if cand is None:
        return PartResult(False, "no answer for it", "missing", "", ref_text)
    if "error" in cand:
        return PartResult(None, f"the answer could not be read: {cand['error']}", "parse", "", ref_text)
    out = _compare(cand, ref, opts, other_labels, answer_type.lower())
    out.candidate, out.reference = cand.get("text", ""), ref_text
    return out


def _compare(cand, ref, opts, other_labels, kind):
    """One part of a written answer against the reference's: its words (choices, a yes or no, a
    text), its label, its relations and intervals, then its value (units, a range, other readings)."""
    said = _words(cand, ref, kind)
    if said is not None:
        return said
    note = _label_note(cand, ref, opts, other_labels)
    if isinstance(note, PartResult):
        return note
    shaped = _relation_forms(cand, ref, opts, note)
    if isinstance(shaped, PartResult):
        return shaped
    return _values(shaped, ref, opts, note)


def _words(cand, ref, kind):
    """The verdict the words decide alone (letters chosen, a 'no' beside a value, a text answer); None: none."""
    if "choice" in kind:
        got, want = _letters(cand.get("raw", "")), _letters(ref.get("raw", ""))
        return PartResult(got == want and bool(want), f"choices {sorted(got)} " + ("match" if got == want else "differ"),
                          "choice")
    cpol, rpol = cand.get("polarity"), ref.get("polarity")
    if cpol != rpol and (cpol == "no" or (cpol and rpol)):
        # "\text{no, } v = 2 m/s": the words beside the number deny it
        return PartResult(False, f"the answer says '{cpol}' beside its value", "text")
    if ref.get("remark") and cand.get("remark") != ref["remark"]:
        # "0.017 m (eastward)": the reference's word in parentheses is part of what it asks
        return PartResult(False, f"the reference says ({ref['remark']}), the answer "
                          + (f"says ({cand['remark']})" if cand.get("remark") else "does not"), "text")
    if ref.get("text_only") or ref["value"].get("t") == "str":
        same = _plain(cand.get("raw", "")) == _plain(ref.get("raw", ""))
        return PartResult(same, "the same text" if same else "a different text", "text")
    return None


def _label_note(cand, ref, opts, other_labels):
    """What the labels say: a verdict (another quantity given, or an equation the other way round),
    or the note a differently labelled value carries ('' when the labels agree)."""
    clab, rlab = _norm_label(cand.get("label")), _norm_label(ref.get("label"))
    if not (clab and rlab and clab != rlab):
        return ""
    # "E_k - B = 5" does not say E_k = 5: a left side holding the asked quantity is another one
    if (clab in {_norm_label(x) for x in other_labels} or clab in _free_names(ref["value"])
            or rlab in _free_names(cand.get("lhs"))):
        return PartResult(False, f"the answer gives {cand['label']}, the question asks for {ref['label']}", "label")
    if cand.get("lhs") and ref.get("lhs") and (cand["lhs"].get("t"), ref["lhs"].get("t")) != ("sym", "sym"):
        return _relations(cand, ref, opts)  # "R^2 = x^2 + y^2" for "x^2 + y^2 = R^2": the same equation
    return f" (labelled {cand['label']})"


def _relation_forms(cand, ref, opts, note):
    """Equations, inequalities and intervals on either side: a verdict, or the candidate to compare
    by value (an interval written as a pair read as the open interval)."""
    rv, cv = ref["value"], cand["value"]
    if (_is_relation(rv) and rv.get("f") not in ("Equality", "Unequality") and cand.get("paren_pair")
            and C._kind(cv) == "seq" and len(cv["a"]) == 2):
        cv = _open_interval(cv)  # "(0, 1)" for "0 < f(x) < 1": the open interval
        cand = dict(cand, value=cv)
    if _is_relation(rv) and rv.get("f") not in ("Equality", "Unequality") and C._kind(cv) == "interval":
        as_set = _as_set(rv, opts)  # "-2 \le x \le 7" answered "x \in [-2, 7]"
        if as_set is not None:
            return _finish(C.compare(cv, as_set, opts), note)
    if _is_relation(rv) or (ref.get("lhs") and _is_relation(cv) and C._kind(rv) != "interval"):
        return _relations(cand, ref, opts)
    if _is_relation(cv):
        if ref.get("paren_pair") and C._kind(rv) == "seq" and len(rv["a"]) == 2:
            rv = _open_interval(rv)  # (2, 5) beside an inequality is the open interval
        if C._kind(rv) == "interval":
            as_set = _as_set(cv, opts)
            if as_set is not None:
                return _finish(C.compare(as_set, rv, opts), note)
        return PartResult(False, "expected an expression; the answer is an equation or inequality", "relation")
    if cand.get("lhs") and not ref.get("lhs") and _free_names(cand["lhs"]) & _free_names(rv):
        return PartResult(False, "expected an expression; the answer is an equation in "
                                 f"{cand['label']}", "relation")
    return cand


def _values(cand, ref, opts, note):
    """The candidate's value against the reference's: its stated value, units, a range, the
    reference's approximate forms and the other readings of what was written."""
    rv, cv = ref["value"], cand["value"]
    if cand.get("alts") and _has_symbols(cv) and not _has_symbols(rv):
        # "E = q^2/(4 pi eps_0 r) \approx 5.0e-8 J" against a number: the value it states
        cv, note = cand["alts"][-1], note + " (the answer's stated value)"
        cand = dict(cand, value=cv)
    opts = _with_candidate_digits(opts, cand)
    cv, unit_note, unit_problem = _units(cand, ref, opts)
    if unit_problem:
        return PartResult(False, unit_problem, "units")
    if ref.get("range") and C._kind(rv) == "interval":
        res = _in_range(cv, rv, opts)
        return PartResult(res[0], res[1] + unit_note + note, "range")
    if C._kind(rv) == "interval" and cand.get("paren_pair") and C._kind(cv) == "seq" and len(cv["a"]) == 2:
        cv = _open_interval(cv)
    res = C.compare(cv, rv, opts)
    if not res.equal:
        other = _other_reading(cand, ref, cv, rv)
        if other is not None:
            alt_res = C.compare(other[0], other[1], opts)
            if alt_res.equal:
                return _finish(C.Result(True, alt_res.reason + other[2], alt_res.method), unit_note + note)
    if not res.equal and ref.get("alts"):
        for alt in ref["alts"]:
            alt_res = C.compare(cv, alt, opts)
            if alt_res.equal:
                return _finish(C.Result(True, alt_res.reason + " (the reference's approximate form)", alt_res.method),
                               unit_note + note)
    return _finish(res, unit_note + note)


def _with_candidate_digits(opts, cand):
    """The options with the digits the candidate wrote (rt/precision.py judges its number at them)."""
    import copy
    out = copy.copy(opts)
    out.candidate_literals = cand.get("literals") or {}
    return out


_EULER = {"t": "const", "v": "E"}


def _other_reading(cand, ref, cv, rv):
    """(candidate, reference, note) read the other way a notation allows, or None: a percentage
    against a plain number is also that number (``0.625 %`` for a reference 0.62 asked in percent);
    ``e`` on one side against Euler's number on the other is Euler's number (``\text{e}^{-1}`` for
    ``1/e``)."""
    if _is_percent(cand.get("unit")) and not ref.get("unit"):
        return cand["value"], rv, " (as a percentage)"
    if cand.get("comma_decimal") and C._kind(rv) == "leaf" and not _is_relation(rv):
        return cand["comma_decimal"], rv, " (read with a decimal comma)"
    if ref.get("comma_decimal") and C._kind(cv) == "leaf" and not _is_relation(cv):
        return cv, ref["comma_decimal"], " (read with a decimal comma)"
    if rv.get("t") == "sym" and len(rv.get("name", "")) >= 3 and rv["name"].isalpha() and \
            _plain(cand.get("raw", "")) == rv["name"].lower():
        return rv, rv, " (the same word)"  # "$odd$" for \text{odd}
    if _has_euler(rv) and _has_sym(cv, "e"):
        return _replace_sym(cv, "e", _EULER), rv, " (e read as Euler's number)"
    if _has_euler(cv) and _has_sym(rv, "e"):
        return cv, _replace_sym(rv, "e", _EULER), " (e read as Euler's number)"
    return None


def _walk(tree):
    stack = [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            yield n
            stack.extend(n.get("a") or [])


def _is_percent(unit):
    return (unit or "").replace("\\", "").strip() in ("%", "percent", "pct")


def _has_euler(tree):
    return any(n == _EULER or (n.get("t") == "fn" and n.get("f") == "exp") for n in _walk(tree))


def _has_sym(tree, name):
    return any(n.get("t") == "sym" and n.get("name") == name for n in _walk(tree))


def _replace_sym(tree, name, node):
    if not isinstance(tree, dict):
        return tree
    if tree.get("t") == "sym" and tree.get("name") == name:
        return dict(node)
    if "a" in tree:
        return dict(tree, a=[_replace_sym(x, name, node) for x in tree["a"]])
    return tree


def _open_interval(pair):
    return {"t": "fn", "f": "Interval", "a": [*pair["a"], {"t": "bool", "v": True}, {"t": "bool", "v": True}]}


def _finish(res, note=""):
    reason = res.reason.split(": ", 1)[-1] if res.reason.startswith("answer") else res.reason
    if res.equal is None:
        return PartResult(False, f"not shown equivalent: {reason}{note}", res.method)
    return PartResult(bool(res.equal), reason + note, res.method)


def _relations(cand, ref, opts):
    """Equations: the same up to a constant factor; inequalities: the same direction."""
    rv = ref["value"] if _is_relation(ref["value"]) else _eq(ref["lhs"], ref["value"])
    if _is_relation(cand["value"]):
        cv = cand["value"]
    elif cand.get("lhs"):
        cv = _eq(cand["lhs"], cand["value"])
    else:
        return PartResult(False, "expected an equation or inequality; the answer is an expression", "relation")
    if rv.get("f") == "And" or cv.get("f") == "And":
        if rv.get("f") != cv.get("f") or len(rv["a"]) != len(cv["a"]):
            return PartResult(False, "a different chain of relations", "relation")
        return _finish(C._all(zip(cv["a"], rv["a"]), opts, ["answer"] * len(rv["a"])))
    return _finish(C.compare(cv, rv, opts))


def _eq(lhs, rhs):
    return {"t": "fn", "f": "Equality", "a": [lhs, rhs]}


def _units(cand, ref, opts):
    """(candidate value in the reference's unit, note, problem)."""
    cv, cu, ru = cand["value"], cand.get("unit"), ref.get("unit")
    if cu and not cand.get("unit_marked") and not ru and not _is_percent(cu):
        # "2 m" with no unit asked: the letters are symbols
        return (cand.get("unsplit") or cv), "", ""
    if cu and ru:
        f, why = unit_factor(cu, ru)
        if f is None:
            return cv, "", why
        if is_offset(cu) or is_offset(ru):
            return _offset(cv, cu, ru)
        return _scale(cv, f), (f" (converted from {pretty_unit(cu)})" if str(f) != "1" else ""), ""
    if cu and not ru:
        f, _ = unit_factor(cu, "radian")  # degrees against a bare angle; percent against a fraction
        if f is None:
            f, _ = unit_factor(cu, "dimensionless")
        if f is not None:
            return _scale(cv, f), "", ""
        return cv, f" (the reference states no unit; {pretty_unit(cu)} not checked)", ""
    if ru and not cu:
        return cv, f" (taken in {pretty_unit(ru)})", ""
    return cv, "", ""


def _scale(tree, f):
    import sympy as sp
    if str(f) == "1":
        return tree
    ft = T.to_tree(sp.sympify(f, strict=True), sp)  # a unit factor: a SymPy number, never text
    k = C._kind(tree)
    if k in ("seq", "set"):
        return dict(tree, a=[_scale(x, f) for x in tree["a"]])
    if k == "interval":
        if tree.get("f") == "Union":
            return dict(tree, a=[_scale(x, f) for x in tree["a"]])
        return dict(tree, a=[_scale(tree["a"][0], f), _scale(tree["a"][1], f), *tree["a"][2:]])
    return {"t": "fn", "f": "Mul", "a": [ft, tree]}


def _offset(cv, cu, ru):
    from .units import convert_number
    try:
        import sympy as sp
        x = float(T.from_tree(cv, sp))
    except Exception:  # noqa: BLE001
        return cv, "", f"{pretty_unit(cu)} to {pretty_unit(ru)} converts plain numbers only"
    y = convert_number(x, cu, ru)
    if y is None:
        return cv, "", f"unit {pretty_unit(cu)} is not convertible to {pretty_unit(ru)}"
    return {"t": "float", "v": repr(y), "prec": 53}, f" (converted from {pretty_unit(cu)})", ""


def _in_range(cv, rv, opts):
    try:
        return run_guarded(step_in_range, 2 * opts.step_timeout, {"c": cv, "r": rv})
    except (StepTimeout, StepFailed) as exc:
        return False, f"could not check the range ({exc})"


def step_in_range(job):
    """A number inside the reference's acceptance range (HiPhO), or a range inside it."""
    import sympy as sp
    c = T.from_tree(job["c"], sp, sympy_containers=True)
    r = T.from_tree(job["r"], sp, sympy_containers=True)
    lo, hi = float(r.start), float(r.end)
    slack = 1e-9 * max(abs(lo), abs(hi))
    if isinstance(c, sp.Interval):
        ends = [c.start, c.end]
    elif isinstance(c, (tuple, list)) or getattr(c, "is_Tuple", False):
        return False, "expected one value in the range"
    else:
        ends = [c]
    values = []
    for e in ends:
        v = sp.N(e, 30)
        if not v.is_number or v.free_symbols or not v.is_real:
            return False, "the answer is not a real number"
        values.append(float(v))
    inside = all(lo - slack <= v <= hi + slack for v in values)
    shown = " to ".join(f"{v:.4g}" for v in values)
    return inside, f"{shown} is {'inside' if inside else 'outside'} the accepted range"


def _as_set(tree, opts):
    try:
        return run_guarded(step_as_set, 2 * opts.step_timeout, {"c": tree})
    except (StepTimeout, StepFailed):
        return None


def step_as_set(job):
    """``0 < x < 1``, ``0 < f(x) < 1``, ``x > 2`` -> the interval it describes, as a tree: every
    inequality bounds one and the same quantity by numbers."""
    import sympy as sp
    c = T.from_tree(job["c"], sp, sympy_containers=True)
    rels = list(c.args) if isinstance(c, sp.And) else [c]
    if not all(isinstance(r, sp.core.relational.Relational) and not isinstance(r, (sp.Eq, sp.Ne)) for r in rels):
        return None
    sides = [x for r in rels for x in (r.lhs, r.rhs)]
    subjects = {x for x in sides if x.free_symbols}
    if len(subjects) != 1:
        return None
    subject = subjects.pop()
    x = sp.Dummy("x", real=True)
    return T.to_tree(c.xreplace({subject: x}).as_set(), sp)


def _letters(text):
    """The option letters an answer names: ``C``, ``c``, ``(c)``, ``A, C``, ``b) 1 MeV``; else every
    standalone capital letter."""
    import re
    text = re.sub(r"\\(?:text|mathrm|textbf|mathbf|textrm)\s*\{([^{}]*)\}", r"\1", text[:2000])
    text = re.sub(r"\$|\\[,;:! ]", " ", text).strip().strip(".").strip()
    one = r"\(?\s*[A-Za-z]\s*\)?"
    if re.fullmatch(one + r"(?:\s*(?:,|;|&|and)\s*" + one + r")*", text, re.IGNORECASE):
        return {x.upper() for x in re.findall(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])", re.sub(r"\band\b", " ", text))}
    lead = re.match(r"\(?\s*([A-Za-z])\s*\)(?=\s|$)", text)
    if lead:
        return {lead.group(1).upper()}
    return set(re.findall(r"(?<![A-Za-z\\])[A-Z](?![A-Za-z])", text))


def _plain(text):
    import re
    text = re.sub(r"\\(?:text|mathrm|textrm)\s*\{([^{}]*)\}", r"\1", text)
    return re.sub(r"[\s$\\{}]", "", text).lower()


# ------------------------------------------------------------------------------ verdict


def grade_parts(cands, ref_parts, opts_for, *, hipho=False, choices=False):
    """Verdict dict for chosen candidate parts against reference parts (``choices``: a
    multiple-choice problem, every part compared as letters)."""
    if choices:
        ref_parts = [dict(r, answer_type="Multiple Choice") for r in ref_parts]
    results = []
    all_labels = [r.get("label") for r in ref_parts if r.get("label")]
    for picked, ref in zip(cands, ref_parts):
        others = [x for x in all_labels if x != ref.get("label")]
        part = picked[1] if picked else None
        results.append(compare_part(part, ref, opts_for(ref), other_labels=others,
                                    answer_type=ref.get("answer_type") or ""))
    ok = [r.correct for r in results]
    verdict = "correct" if all(x is True for x in ok) else "incorrect" if any(x is False for x in ok) else "invalid"
    parts = [{"index": i, "reference": r.reference, "candidate": r.candidate, "correct": r.correct is True,
              "reason": r.reason, "method": r.method} for i, r in enumerate(results)]
    methods = sorted({r.method for r in results})
    out: dict[str, Any] = {"verdict": verdict, "method": methods[0] if len(methods) == 1 else "+".join(methods),
           "compared": {"reference": "; ".join(r.reference for r in results),
                        "candidate": "; ".join(r.candidate for r in results)},
           "parts": parts}
    if len(results) == 1 and not hipho:
        out["reason"] = results[0].reason
        return out
    first_bad = next((i for i, r in enumerate(results) if r.correct is not True), None)
    n_ok = sum(x is True for x in ok)
    if hipho:
        awarded = sum(float(r.get("points", 1.0)) for r, x in zip(ref_parts, ok) if x is True)
        total = sum(float(r.get("points", 1.0)) for r in ref_parts)
        out["points"], out["points_total"] = round(awarded, 6), round(total, 6)
        out["reason"] = f"{n_ok}/{len(results)} boxed answers correct, {awarded:g}/{total:g} answer points"
    else:
        out["reason"] = f"{n_ok}/{len(results)} parts correct"
    if first_bad is not None:
        name = ref_parts[first_bad].get("label")
        where = f"part {first_bad + 1}{f' ({name})' if name else ''}: " if len(results) > 1 else ""
        out["reason"] += f"; {where}{results[first_bad].reason}"
    elif len(results) == 1:
        out["reason"] += f"; {results[0].reason}"
    return out


# ------------------------------------------------------------------------------ options


def _letter_set(text):
    return {x.strip() for x in (text or "").split(",") if x.strip()}


def _options_of(part, options, opts_for):
    """The letters of the options whose content ``part`` equals (options that are words: none)."""
    found = set()
    for letter, oparts in options.items():
        if not oparts:
            continue
        res = compare_part(part, oparts[0], opts_for(oparts[0]))
        if res.correct is True:
            found.add(letter)
    return found


def grade_options(job, ref_parts, options, opts_for):
    """A problem whose options' texts are known: the letters the reference names or the option it
    gives, against the letters the answer names or the option whose content (or wording) it gives. A
    letter beside the content of another option is not correct. None when the reference is none of
    the options (then the problem is graded as any other)."""
    written = job["written"]
    want = _letter_set(job.get("reference_letters")) or _letter_set(job.get("reference_wording"))
    if not want and len(ref_parts) == 1:
        want = _options_of(ref_parts[0], options, opts_for)
    if not want:
        return None
    named = _letter_set(written.get("letters"))
    box = written["boxes"][written["final"][-1]]
    content = box["parts"][0] if written.get("has_content") and box.get("ok") and len(box["parts"]) == 1 else None
    gives = (_options_of(content, options, opts_for) if content else set()) or _letter_set(written.get("wording"))
    shown = ", ".join(sorted(want))
    if named and gives and named != gives:
        return _choice_out(False, f"the answer names {sorted(named)} beside the content of option {sorted(gives)}",
                           shown, ", ".join(sorted(named)))
    got = named or gives
    if not got:
        if content is not None and len(ref_parts) == 1:  # a value that is none of the options' contents
            res = compare_part(content, ref_parts[0], opts_for(ref_parts[0]))
            return _choice_out(res.correct is True, res.reason, shown, content.get("text", ""), res.method)
        return {"verdict": "invalid", "method": "choice", "reason": "the answer names none of the options",
                "compared": {"reference": shown, "candidate": ""}, "parts": []}
    same = got == want
    return _choice_out(same, f"choices {sorted(got)} " + ("match" if same else "differ"), shown, ", ".join(sorted(got)))


def _choice_out(correct, reason, reference, candidate, method="choice"):
    return {"verdict": "correct" if correct else "incorrect", "method": method, "reason": reason,
            "compared": {"reference": reference, "candidate": candidate},
            "parts": [{"index": 0, "reference": reference, "candidate": candidate, "correct": bool(correct),
                       "reason": reason, "method": method}]}
