"""Formatter: writes the final answer in the problem's template from the established results
(naming the ER each part comes from), or bounces back to the orchestrator when they cannot fill
it. At the end of a budget (``forced``) it also sees the demoted results and the best hypotheses,
and writes the best answer the lab has, saying what is not established; an answer that names
nothing reviewed it rests on is no answer.

The filled template is checked in code (``check_answer_code``): valid Python defining the
template's function, no placeholder left, no name it never defines, no SymPy symbol the template
does not declare, no undefined function, and no regime guard returning a sentinel (``sp.nan``,
``sp.oo``, a ``raise``...) where the result was not derived."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext

from physlab.lab.gates import forced_sources, unestablished
from physlab.lab.roles._base import LabEnv, PromptSource, correct_or_drop, run_role
from physlab.lab.state.models import ResearchState

ROLE = "formatter"


class FilledPart(BaseModel):
    part: str = Field(description="Which part of the answer: a name in the template (e.g. a variable it returns) "
                                  "or, without a template, a short label.")
    source: str = Field(description="The ER-n it is taken from (only when the run is ending: an ER-n or WH-n).")


class FinalAnswer(BaseModel):
    ready: bool = Field(description="False when the established results cannot fill the answer.")
    answer_code: str = Field(default="", description="The filled template (complete Python source).")
    answer_markdown: str = Field(default="", description="ANSWER.md: the answer, then which result fills which part.")
    sources: list[FilledPart] = Field(default_factory=list, description="Every part of the answer and its source.")
    missing: str = Field(default="", description="When not ready: what is missing.")


@dataclass
class Desk:
    state: ResearchState
    template: str | None
    forced: bool
    dropped: list[str] = field(default_factory=list)
    always: bool = False      # forced_answer "always": any id of the run may be a source, or none


def template_function(template: str | None) -> str | None:
    m = re.search(r"^def\s+(\w+)\s*\(", template or "", flags=re.M)
    return m.group(1) if m else None


def check_answer_code(code: str, template: str | None) -> str | None:
    """A reason the code cannot be the filled template, or None."""
    code = strip_fence(code)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"answer_code is not valid Python ({exc.msg}, line {exc.lineno})"
    fn = template_function(template)
    if fn and not any(isinstance(n, ast.FunctionDef) and n.name == fn for n in tree.body):
        return f"answer_code must define the template's function `{fn}`"
    if any(isinstance(n, ast.Constant) and n.value is Ellipsis for n in ast.walk(tree)):
        return "answer_code still contains a `...` placeholder"
    return _sentinel(tree) or _undefined(tree) or _undeclared_symbols(tree, template)


# Values a regime guard returns where a result was not derived (upstream's formatter rule).
_SENTINELS = {"oo", "nan", "zoo", "NaN", "Infinity", "NegativeInfinity", "ComplexInfinity", "EmptySet", "inf"}


def _is_sentinel(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in _SENTINELS:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and node.args \
            and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).strip().lower().lstrip("+-") in (
                "inf", "nan", "infinity"):
        return True
    return False


def _sentinel(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            return "answer_code raises an exception: no sentinel guards; return the expression as established"
        guarded: list[ast.AST] = []
        if isinstance(node, (ast.If, ast.IfExp)):
            guarded = [*(node.body if isinstance(node.body, list) else [node.body]),
                       *(node.orelse if isinstance(node.orelse, list) else [node.orelse])]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Piecewise":
            guarded = list(node.args)
        if any(_is_sentinel(x) for g in guarded for x in ast.walk(g)):
            return ("answer_code guards a regime with a sentinel value (oo, nan, zoo, inf...): no sentinel guards; "
                    "return the established expression itself")
        if isinstance(node, ast.Attribute) and node.attr == "Function":
            return "answer_code builds an undefined function (sp.Function): only the template's declared symbols"
    return None


def _undefined(tree: ast.Module) -> str | None:
    """A name the code reads but never defines (a symbol it forgot to declare, a typo)."""
    import builtins

    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                a = node.args
                bound |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
                bound |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    used = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    missing = [n for n in dict.fromkeys(used) if n not in bound]
    return f"answer_code uses `{missing[0]}`, which it never defines" if missing else None


def _symbol_names(tree: ast.AST) -> list[str]:
    """The names given to sp.symbols(...) / sp.Symbol(...) as string literals."""
    out = []
    for node in ast.walk(tree):
        called = getattr(node, "func", None)
        if isinstance(node, ast.Call) and getattr(called, "attr", getattr(called, "id", "")) in ("symbols", "Symbol") \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out += re.split(r"[\s,]+", node.args[0].value.strip())
    return [x for x in out if x]


def _undeclared_symbols(tree: ast.Module, template: str | None) -> str | None:
    """A SymPy symbol the template does not declare (its own symbols and its function's inputs)."""
    if not template:
        return None
    try:
        tpl = ast.parse(template)
    except SyntaxError:
        return None
    declared = set(_symbol_names(tpl)) | {a.arg for n in ast.walk(tpl) if isinstance(n, ast.FunctionDef)
                                           for a in n.args.args}
    extra = [x for x in dict.fromkeys(_symbol_names(tree)) if x not in declared]
    return (f"answer_code introduces the symbol `{extra[0]}`, which the template does not declare "
            f"(declared: {', '.join(sorted(declared)) or 'none'})") if extra else None


def strip_fence(code: str) -> str:
    m = re.search(r"```(?:python)?\n(.*?)```", code, flags=re.S)
    return (m.group(1) if m else code).strip() + "\n"


def _validate(ctx: RunContext[Desk], a: FinalAnswer) -> FinalAnswer:
    d, s = ctx.deps, ctx.deps.state
    if a.ready and d.template:
        why = check_answer_code(a.answer_code, d.template)
        if why:
            raise ModelRetry(why + ". Return the complete template with every placeholder filled.")
        a = a.model_copy(update={"answer_code": strip_fence(a.answer_code)})
    if a.ready and not d.template and not a.answer_markdown.strip():
        raise ModelRetry("Write the answer in answer_markdown.")
    kinds = ("ER", "WH") if d.forced else ("ER",)
    unknown = [p.source for p in a.sources if p.source.split("-")[0] not in kinds or s.find(p.source) is None
               or (d.forced and not d.always and p.source not in forced_sources(s, [p.source]))]
    problems = []
    if unknown:
        problems.append(f"sources {unknown} are not {' or '.join(k + '-n' for k in kinds)} ids of this run"
                        + (" that were reviewed and are neither refuted nor abandoned"
                           if d.forced and not d.always else ""))
    if a.ready and not a.sources and not d.always:
        problems.append("sources is empty: name the result each part of the answer comes from")
    if correct_or_drop(ctx, problems, "Submit again with these fixed."):
        d.dropped = problems
        a = a.model_copy(update={"sources": [p for p in a.sources if p.source not in unknown]})
    return a


@dataclass
class Assessment:
    """What the lab makes of the formatter's output: the code that fills the template (if it
    does), the Markdown body, the sources — or why the completion goes back to the orchestrator."""

    code: str | None
    body: str | None
    sources: list[str]
    bounce: str = ""


def assess(a: FinalAnswer, s: ResearchState, template: str | None, *, forced: bool, always: bool = False
           ) -> Assessment:
    """``always`` (a forced answer under ``forced_answer="always"``): whatever fills the template is
    the answer, resting on reviewed claims or not (physics-intern's forced formatter)."""
    code = None
    if template and a.answer_code.strip() and check_answer_code(a.answer_code, template) is None:
        code = strip_fence(a.answer_code)
    sources = [p.source for p in a.sources]
    if not forced:         # completion: the answer must be whole and rest on established results only
        why = ""
        if not a.ready:
            why = a.missing or "the formatter says the results are not enough"
        elif template and code is None:
            why = "the template could not be filled"
        elif not sources:
            why = "the answer names no established result it rests on"
        elif bad := unestablished(s, sources):
            why = f"the answer rests on {', '.join(bad)}: not established"
        if why:
            return Assessment(code, None, sources, bounce=why)
    elif not always and not forced_sources(s, sources):   # ending: resting on nothing reviewed is no answer
        return Assessment(None, None, sources)
    body = a.answer_markdown.strip()
    if code is None and not body:
        return Assessment(None, None, sources)
    if not body:
        body = f"```python\n{code}```"
    elif code is not None and "```" not in body:
        body += "\n\n```python\n" + code.strip() + "\n```"
    return Assessment(code, body, sources)


async def run(env: LabEnv, desk: Desk, user_prompt: PromptSource) -> FinalAnswer:
    return await run_role(env, ROLE, user_prompt, FinalAnswer, deps=desk, output_name="submit_answer",
                          output_validator=_validate)
