"""CritPt's evaluation protocol for `oneshot` (CritPt's one-step) and `two-step` (its default), in
our words, and the reader of CritPt's own prompt-template file format (``--param prompt_file``).

The protocol's facts come from CritPt's evaluation pipeline (CritPt-Benchmark/CritPt:
``src/critpt/generation/``, ``templates/prompt_template_default.yaml``): one system prompt with
five rules (a step-by-step derivation, LaTeX, the problem's conventions and units, a final line
starting "Final Answer:" with the exact value or at least 12 significant digits, and either "fill
the template at the end of the problem, transcription only, no import beyond the template's"
(one-step) or "follow a requested format" (two-step)); the user message is the problem, followed
in one-step by the template in a fenced block; two-step adds, in the same conversation, a user turn
asking to transcribe the final answer into the template. The wording here is ours: a user who wants
CritPt's own text points ``prompt_file`` at the YAML CritPt ships, which is read when the run
starts, so PhysLab carries none of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import field_validator

from physlab.problems.model import Problem
from physlab.strategies.params import ModelParams, param
from physlab.strategies.sampling import load_prompt, render

Style = Literal["one-step", "two-step"]
CRITPT = "CritPt-Benchmark/CritPt (evaluation pipeline)"
CRITPT_YAML = f"{CRITPT}: templates/prompt_template_default.yaml"

# Keys of CritPt's format: the two roots, the leaves the pipeline supplies, and the imports.
SYSTEM_ROOT, PARSE_ROOT = "SYSTEM_PROMPT", "PARSE_PROMPT"
STYLE_LEAF, TEMPLATE_LEAF = "PROMPT_SPECS_STYLE", "PROMPT_SPECS_ANSWER_CODE_TEMPLATE"
IMPORTS = "IMPORTS"


def builtin_system(style: Style) -> str:
    """Our system prompt for ``style``: the five rules, the fifth by style."""
    last = "critpt_rule_template" if style == "one-step" else "critpt_rule_format"
    return render("critpt_system", last_rule=load_prompt(last).strip()).strip()


def builtin_parse(template: str) -> str:
    """Our template step of two-step: transcribe the final answer, nothing more."""
    return render("critpt_parse", template=template.strip()).strip()


def user_message(problem: Problem, *, with_template: bool) -> str:
    """The problem as CritPt's pipeline sends it: the statement, then (one-step) the template as a
    fenced Python block."""
    text = problem.statement.strip()
    if with_template and problem.answer_template:
        text += f"\n\n```python\n{problem.answer_template.strip()}\n```"
    return text


# ---- CritPt's prompt-template file (YAML whose values are Jinja templates) --------------------

_ENV = SandboxedEnvironment(undefined=StrictUndefined)  # a user's file: no attribute access, no code


@dataclass
class PromptFile:
    """A template file in CritPt's format: a mapping of keys to Jinja templates (or plain values);
    ``SYSTEM_PROMPT`` and ``PARSE_PROMPT`` are the roots, other keys are rendered where a root
    refers to them, ``IMPORTS`` pulls in other files beside it (later ones and the file's own keys
    win)."""

    path: Path
    keys: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> "PromptFile":
        """Read and check the file; ValueError with one line saying what is wrong."""
        top = Path(path).expanduser()
        keys = _read(top.resolve(), top.resolve().parent, ())
        if SYSTEM_ROOT not in keys:
            raise ValueError(f"no {SYSTEM_ROOT} in the template (CritPt's format requires one)")
        found = cls(top, keys)
        for style in ("one-step", "two-step"):
            found.system(style)  # every reference resolves, the syntax is right
        if PARSE_ROOT in keys:
            found.parse("def answer():\n    ...")
        return found

    def system(self, style: Style, template: str = "") -> str:
        return self._render(SYSTEM_ROOT, {STYLE_LEAF: style, TEMPLATE_LEAF: template}).strip()

    def parse(self, template: str) -> str:
        if PARSE_ROOT not in self.keys:
            raise ValueError(f"no {PARSE_ROOT} in the template (two-step fills the answer template with it)")
        return self._render(PARSE_ROOT, {STYLE_LEAF: "two-step", TEMPLATE_LEAF: template}).strip()

    def _render(self, root: str, leaves: dict[str, Any]) -> str:
        values = {**self.keys, **leaves}  # the pipeline's leaves win, as in CritPt's renderer
        done: dict[str, Any] = {}

        def resolve(key: str, stack: tuple[str, ...]) -> Any:
            if key in done:
                return done[key]
            value = values[key]
            if not isinstance(value, str) or key in leaves:
                done[key] = value
                return value
            try:
                refs = meta.find_undeclared_variables(_ENV.parse(value))
                context = {}
                for ref in sorted(refs):
                    if ref in stack or ref == key:
                        raise ValueError(f"template key {key} refers to itself ({' -> '.join((*stack, key, ref))})")
                    if ref in values:
                        context[ref] = resolve(ref, (*stack, key))
                done[key] = _ENV.from_string(value).render(context)
            except TemplateError as exc:
                line = getattr(exc, "lineno", None)  # a syntax error has one, an undefined name not
                where = f" (line {line})" if line else ""
                raise ValueError(f"template key {key}: {exc.message}{where}") from None
            return done[key]

        return str(resolve(root, ()))


def _read(path: Path, root: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    # The file named by prompt_file is shown beside the message already; an imported one is named.
    name = f"imported file {path.relative_to(root)}: " if seen else ""
    if path in seen:
        raise ValueError(f"{name}IMPORTS go round in a circle")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{name}no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}cannot be read ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValueError(f"{name}expected a mapping of keys to templates, got {type(data).__name__}")
    merged: dict[str, Any] = {}
    for kind, target in _imports(data.pop(IMPORTS, None), name):
        other = (path.parent / target).resolve()
        if not other.is_relative_to(root):
            raise ValueError(f"{name}IMPORTS {target} is outside the template's folder")
        if kind == "template":
            merged.update(_read(other, root, (*seen, path)))
        else:  # KEY: file -> the file's text is the key's value
            try:
                merged[kind] = other.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                raise ValueError(f"{name}IMPORTS {kind}: {target} cannot be read") from None
    merged.update(data)
    return merged


def _imports(value: Any, name: str) -> list[tuple[str, str]]:
    """CritPt's IMPORTS forms as (kind, path) pairs: a path, a list of paths, a mapping
    ``{template: [paths], KEY: path}``, or a list mixing paths and such mappings."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, str):
            out.append(("template", item))
        elif isinstance(item, dict):
            for kind, paths in item.items():
                for p in paths if isinstance(paths, list) else [paths]:
                    if not isinstance(p, str):
                        raise ValueError(f"{name}IMPORTS {kind}: expected a path, got {type(p).__name__}")
                    out.append((str(kind), p))
        else:
            raise ValueError(f"{name}IMPORTS: expected a path, a list or a mapping, got {type(item).__name__}")
    return out


# ---- parameters --------------------------------------------------------------------------------


class CritptParams(ModelParams):
    """oneshot's and two-step's parameters: the sampling temperature and the prompt file."""

    uses_parse: ClassVar[bool] = False  # two-step needs the file's PARSE_PROMPT

    prompt_file: str | None = param(
        None, "A prompt template in CritPt's YAML format (SYSTEM_PROMPT, PARSE_PROMPT, SYSTEM_PROMPT_* pieces, "
        "PROMPT_SPECS_* values, IMPORTS beside it), read when the run starts; unset: PhysLab's wording of the "
        "same protocol.", f"{CRITPT_YAML} is the file this format reads; the built-in rules follow it")

    @field_validator("prompt_file")
    @classmethod
    def _prompt_file_reads(cls, value: str | None) -> str | None:
        if value is not None:
            found = PromptFile.load(value)
            if cls.uses_parse and PARSE_ROOT not in found.keys:
                found.parse("")  # raises: two-step cannot fill the template without it
        return value

    def protocol(self) -> "Protocol":
        return Protocol(PromptFile.load(self.prompt_file) if self.prompt_file else None)


@dataclass
class Protocol:
    """The prompts of one run: from the file when there is one, else ours."""

    file: PromptFile | None = None

    def system(self, style: Style, template: str = "") -> str:
        return self.file.system(style, template) if self.file else builtin_system(style)

    def parse(self, template: str) -> str:
        return self.file.parse(template) if self.file else builtin_parse(template)


class TwoStepParams(CritptParams):
    uses_parse: ClassVar[bool] = True
