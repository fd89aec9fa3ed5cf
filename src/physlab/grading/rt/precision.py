"""The one precision policy of the grader (docs/grading.md, "Precision"): how close two numbers must
be to be the same answer. ``compare.compare_leaf`` asks :func:`tolerance` for every pair of scalar
leaves, written answers and code answers alike.

1. A problem's ``rtol`` wins, on both sides (HiPhO items: their 1 % or the reference's stated
   precision, whichever is looser, as their markers do).
2. A reference written as a short decimal (``0.785``) is matched to its stated precision: half a
   unit in its last digit.
3. Otherwise a candidate's number that states at least two significant digits is judged at the
   precision it states: half a unit in its last written digit (``2.09`` for 2π/3 passes, ``2.1``
   passes, ``2.2`` does not), so never looser than 5 %; one digit earns no slack (``0.1`` is not
   0.1049, ``3`` is not π). A number's stated digits are those written in the answer (``2.50`` states three)
   or, for a float from code, those of its shortest round-trip form (``2.09``; a computed
   ``2.0943951023931953`` states seventeen and gets no slack).
4. Otherwise floats are compared at 1e-8 relative and exact values exactly (1e-20 at 40 digits).

CritPt-imported problems keep CritPt's rule (``precision="critpt"``): CritPt asks for an exact form
or at least 12 significant digits unless the problem states its precision, so a candidate's short
number earns no slack there (rules 1, 2 and 4 only).
"""

import math

DEFAULT_RTOL = 1e-8
EXACT_RTOL = 1e-20
MIN_STATED_DIGITS = 2
# Rule 3 never accepts more than this relative difference (what two digits allow at most).
MAX_STATED_RTOL = 0.05


def significant_digits(text):
    """Significant digits of a decimal written as text ('0.0123' -> 3, '2.50' -> 3, '5e-08' -> 1)."""
    mant = text.strip().lstrip("+-").lower().split("e")[0]
    digits = mant.replace(".", "").lstrip("0")
    if "." not in mant:
        digits = digits.rstrip("0") or digits  # 1500 states 2 digits unless written 1500.
    return max(len(digits), 1)


def half_ulp(value, digits):
    """Half a unit in the last of ``digits`` significant digits of ``value`` (None for 0, inf)."""
    x = abs(float(value))
    if x == 0 or not math.isfinite(x):
        return None
    return 0.5 * 10.0 ** (math.floor(math.log10(x)) - digits + 1)


def stated_digits(value, literals):
    """Digits a candidate's number states: as written (``literals``: repr(float) -> digits, from
    the written answer), else its shortest round-trip decimal."""
    key = repr(float(value))
    if key in (literals or {}):
        return int(literals[key])
    return significant_digits(key)


def tolerance(c_value, r_value, opts, has_float):
    """(rtol, half_ulp) for one candidate leaf against one reference leaf. ``c_value``: the
    candidate's float value when it is a plain number holding a float (else None); ``r_value``: the
    reference's, likewise. ``half_ulp``: an absolute slack that also makes two numbers equal, or None."""
    if opts.rtol is not None:
        rtol = float(opts.rtol)
    else:
        rtol = DEFAULT_RTOL if has_float else EXACT_RTOL
    slack = None
    if opts.rtol is None or opts.precision_also:
        key = repr(r_value) if r_value is not None else None
        if key in opts.literals:
            slack = half_ulp(key, opts.literals[key])
    if opts.rtol is None and getattr(opts, "precision", "stated") == "stated" and c_value is not None:
        digits = stated_digits(c_value, getattr(opts, "candidate_literals", None))
        own = half_ulp(c_value, digits) if digits >= MIN_STATED_DIGITS else None
        if own is not None:
            own = min(own, MAX_STATED_RTOL * abs(float(c_value)))
            slack = own if slack is None else max(slack, own)
    return rtol, slack
