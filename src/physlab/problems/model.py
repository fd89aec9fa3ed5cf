"""The one Problem model every loader produces and every strategy consumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from physlab.problems.templates import ReferenceFormat, detect_reference_format


class Problem(BaseModel):
    """A physics problem.

    ``reference`` and ``solution`` are the answer key. They must never reach a model's prompt or
    anything the sandbox can read while model-written code runs: strategies build prompts from
    :meth:`public`, and only the grader looks at the reference.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="Stable identifier, unique within its suite.")
    statement: str = Field(description="Markdown with LaTeX.")
    answer_template: str | None = Field(
        default=None,
        description="Python source defining answer(...) with '...' placeholders to fill. "
        "None for an open question (answered in ANSWER.md only).",
    )
    reference: str | None = Field(
        default=None,
        description="The reference answer: Python (an expression, or assignments in the "
        "template's names), a number, or LaTeX. None when no reference is known.",
    )
    reference_format: ReferenceFormat | None = None
    solution: str | None = Field(default=None, description="Reference solution text (answer key).")
    rtol: float | None = Field(default=None, description="Relative tolerance for numeric comparison.")
    choices: list[str] | None = Field(
        default=None, description="Multiple choice: the option letters (upper case); the reference is "
        "one or more of them and an answer is graded by the letters it names.")
    options: dict[str, str] | None = Field(
        default=None, description="Multiple choice: the options, letter (upper case) -> text, as the statement "
        "lists them ((a) ... (b) ... (c) ..., recognised when the problem loads) or a problem file gives them "
        "(choices: {A: ..., B: ...}). An answer is graded by the letter it names, the option it gives, or both.")
    images: list[Path] = Field(default_factory=list, description="Figure files (absolute paths).")
    source: str | None = None
    difficulty: int | None = None
    suite: str | None = None
    path: Path | None = Field(default=None, description="File the problem was loaded from.")
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description="Format-specific data (HiPhO answer types, units, points, marking scheme...).",
    )

    @model_validator(mode="before")
    @classmethod
    def _options_in_statement(cls, data: Any) -> Any:
        """Options the statement lists are recognised here, so every loader's problems have them."""
        if isinstance(data, dict) and data.get("options") is None and isinstance(data.get("statement"), str):
            from physlab.problems.choices import options_in_statement

            found = options_in_statement(data["statement"])
            letters = data.get("choices")
            if found and (letters is None or sorted(letters) == sorted(found)):
                data = {**data, "options": found}
        return data

    @model_validator(mode="before")
    @classmethod
    def _prose_reference(cls, data: Any) -> Any:
        """A reference in words is marked ``prose`` here, so every loader's problems say so: no rule
        reads it (its answers are ungraded unless a judge model is named). An option's letter or its
        wording is no prose: the options grade it."""
        if not isinstance(data, dict) or data.get("reference_format") not in (None, "latex"):
            return data
        reference = data.get("reference")
        if not isinstance(reference, str) or (data.get("extra") or {}).get("format") == "hipho" or data.get("choices"):
            return data
        from physlab.problems.choices import letters_by_wording, read_choice
        from physlab.problems.prose import is_prose

        options = data.get("options")
        if options and (read_choice(reference, list(options)) or letters_by_wording(reference, options)):
            return data
        if data.get("reference_format") is None and "\\" not in reference and "$" not in reference:
            return {**data, "reference_format": "prose"} if detect_reference_format(reference) == "prose" else data
        return {**data, "reference_format": "prose"} if is_prose(reference) else data

    @property
    def gradable(self) -> bool:
        return self.reference is not None

    @property
    def has_template(self) -> bool:
        return self.answer_template is not None

    def public(self) -> Problem:
        """The problem without its answer key: what models and sandboxed code may see."""
        if (self.reference is None and self.reference_format is None and self.solution is None
                and self.path is None and not any(k.startswith("answer_key") for k in self.extra)):
            return self  # already public (e.g. the copy a run hands its strategy): frozen, so safe to share
        # A shallow copy: the statement, template and metadata are shared, not dumped and rebuilt
        # for every prompt (metadata can be large, or a structure that is huge once expanded).
        extra = {k: v for k, v in self.extra.items() if not k.startswith("answer_key")}
        # The source file holds the answer key: a public view does not point at it.
        return self.model_copy(update={"reference": None, "reference_format": None, "solution": None,
                                       "path": None, "extra": extra})

    @property
    def qualified_id(self) -> str:
        """``suite/id`` when the problem came from a suite, else ``id``."""
        return f"{self.suite}/{self.id}" if self.suite else self.id
