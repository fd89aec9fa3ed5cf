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
starts, so PhysLab carries none of it. A prompt file is a user's file: it is read here (at most
``MAX_FILE_BYTES``, its values at most ``MAX_VALUE_ITEMS`` items), and its templates are rendered in
a limited child process (``prompt_worker.py``: Jinja's SandboxedEnvironment under a CPU, memory and
wall-time limit, each key's text capped), never on the host.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import field_validator

from physlab.errors import UserError
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

_WORKER = Path(__file__).with_name("prompt_worker.py")
# PhysLab's choices: CritPt's own template is a few KB and renders in milliseconds; these bounds only
# stop a file made to loop, to grow without end, or to fill memory.
MAX_FILE_BYTES = 1_000_000
MAX_VALUE_ITEMS = 10_000
RENDER_CPU_S = 5
RENDER_MEMORY_MB = 512
RENDER_MAX_CHARS = 200_000


def render_templates(values: dict[str, Any], jobs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each (root key, leaves) of ``jobs`` rendered from ``values`` in the limited child process;
    ValueError with one line when the file does not render within the limits."""
    payload = json.dumps({"values": values, "jobs": [[root, leaves] for root, leaves in jobs],
                          "max_chars": RENDER_MAX_CHARS})
    wall = RENDER_CPU_S * 2 + 5
    try:
        done = subprocess.run([sys.executable, "-I", str(_WORKER), str(RENDER_CPU_S), str(RENDER_MEMORY_MB)],
                              input=payload.encode(), capture_output=True, timeout=wall)
    except subprocess.TimeoutExpired:
        raise ValueError(f"the template did not finish rendering within {wall} s (a loop that does not end?)") from None
    if done.returncode in (-9, -24):  # SIGKILL, SIGXCPU: its CPU limit
        raise ValueError(f"the template did not finish rendering within {RENDER_CPU_S} s of CPU (a loop that "
                         "does not end?)")
    try:
        result = json.loads(done.stdout)
    except ValueError:
        said = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise ValueError(f"the template could not be rendered ({said[0][:200]})") from None
    if "error" in result:
        raise ValueError(str(result["error"]))
    return [str(t) for t in result["texts"]]


@dataclass
class PromptFile:
    """A template file in CritPt's format: a mapping of keys to Jinja templates (or plain values);
    ``SYSTEM_PROMPT`` and ``PARSE_PROMPT`` are the roots, other keys are rendered where a root
    refers to them, ``IMPORTS`` pulls in other files beside it (later ones and the file's own keys
    win)."""

    path: Path
    keys: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> PromptFile:
        """Read and check the file; ValueError with one line saying what is wrong."""
        top = Path(path).expanduser()
        keys = _read(top.resolve(), top.resolve().parent, ())
        if SYSTEM_ROOT not in keys:
            raise ValueError(f"no {SYSTEM_ROOT} in the template (CritPt's format requires one)")
        found = cls(top, keys)
        # every reference resolves and the syntax is right, for both styles (one child process)
        jobs = [(SYSTEM_ROOT, {STYLE_LEAF: style, TEMPLATE_LEAF: ""}) for style in ("one-step", "two-step")]
        if PARSE_ROOT in keys:
            jobs.append((PARSE_ROOT, {STYLE_LEAF: "two-step", TEMPLATE_LEAF: "def answer():\n    ..."}))
        render_templates(keys, jobs)
        return found

    def system(self, style: Style, template: str = "") -> str:
        return self._render(SYSTEM_ROOT, {STYLE_LEAF: style, TEMPLATE_LEAF: template}).strip()

    def parse(self, template: str) -> str:
        if PARSE_ROOT not in self.keys:
            raise ValueError(f"no {PARSE_ROOT} in the template (two-step fills the answer template with it)")
        return self._render(PARSE_ROOT, {STYLE_LEAF: "two-step", TEMPLATE_LEAF: template}).strip()

    def _render(self, root: str, leaves: dict[str, Any]) -> str:
        (text,) = render_templates(self.keys, [(root, leaves)])
        return text


def _read(path: Path, root: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    # The file named by prompt_file is shown beside the message already; an imported one is named.
    name = f"imported file {path.relative_to(root)}: " if seen else ""
    if path in seen:
        raise ValueError(f"{name}IMPORTS go round in a circle")
    text = _read_text(path, name)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValueError(f"{name}expected a mapping of keys to templates, got {type(data).__name__}")
    _check_size(data, name)
    merged: dict[str, Any] = {}
    for kind, target in _imports(data.pop(IMPORTS, None), name):
        other = (path.parent / target).resolve()
        if not other.is_relative_to(root):
            raise ValueError(f"{name}IMPORTS {target} is outside the template's folder")
        if kind == "template":
            merged.update(_read(other, root, (*seen, path)))
        else:  # KEY: file -> the file's text is the key's value
            merged[kind] = _read_text(other, f"{name}IMPORTS {kind}: {target}: ")
    merged.update(data)
    return merged


def _read_text(path: Path, name: str) -> str:
    """A file of the template, at most MAX_FILE_BYTES (a prompt template is a few KB)."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ValueError(f"{name}no such file") from None
    except OSError as exc:
        raise ValueError(f"{name}cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ValueError(f"{name}larger than {MAX_FILE_BYTES:,} bytes (a prompt template is a few KB)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}cannot be read ({exc})") from None


def _check_size(data: Any, name: str) -> None:
    """Values of at most MAX_VALUE_ITEMS items in all: YAML aliases can make a few lines a structure
    of billions (each alias repeats a whole list), which rendering or sending would expand."""
    todo, seen = [data], 0
    while todo:
        value = todo.pop()
        seen += 1
        if seen > MAX_VALUE_ITEMS:
            raise ValueError(f"{name}its values hold more than {MAX_VALUE_ITEMS:,} items (YAML aliases repeating "
                             "a list?); a prompt template's values are text")
        if isinstance(value, dict):
            todo += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            todo += value


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

    def protocol(self) -> Protocol:
        """The run's prompts (the file read again now, when the run starts). Blocking (a child process
        renders the file's templates): an async caller runs it in a thread, with :meth:`Protocol.system`
        and :meth:`Protocol.parse`."""
        try:
            return Protocol(PromptFile.load(self.prompt_file) if self.prompt_file else None)
        except ValueError as exc:
            raise UserError(str(exc), path=self.prompt_file, field="--param prompt_file") from None


@dataclass
class Protocol:
    """The prompts of one run: from the file when there is one, else ours."""

    file: PromptFile | None = None

    def system(self, style: Style, template: str = "") -> str:
        return self._from_file(lambda f: f.system(style, template)) if self.file else builtin_system(style)

    def parse(self, template: str) -> str:
        return self._from_file(lambda f: f.parse(template)) if self.file else builtin_parse(template)

    def _from_file(self, render: Any) -> str:
        assert self.file is not None
        try:
            return render(self.file)
        except ValueError as exc:  # the file changed since it was checked, or the problem's template grew it
            raise UserError(str(exc), path=self.file.path, field="--param prompt_file") from None


class TwoStepParams(CritptParams):
    uses_parse: ClassVar[bool] = True
