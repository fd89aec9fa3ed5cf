"""Schema-valid random values for the stand-in's fuzz replies.

A fuzz model that answers every tool call with random strings never gets past the first role of a
structured pipeline: ids are wrong, nested models are half-filled. This generator follows the JSON
schema a request carries (``$ref`` into ``$defs``/``definitions``, ``anyOf``/``oneOf``/``allOf``,
nested objects and arrays, enums, bounds), and when a field's description names the kind of id it
wants (``"The RQ-n or WH-n the worker investigates"``), it picks an id of that kind from the ones
the conversation mentions — so random runs reach the roles further down the pipeline while staying
random. JSON Schema libraries validate instances; none we depend on generates them (hypothesis-
jsonschema would, but as a test strategy, not a seeded runtime generator), hence this module.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

_ID = re.compile(r"\b([A-Z]{2})-(\d+)\b")
_KIND = re.compile(r"\b([A-Z]{2})-n\b")
_QUOTED = re.compile(r"'([A-Z]{2}-\d+)'")
_REFUSAL = re.compile(r"Fix the errors and try again|Refused|[Vv]alidation error|unknown", re.I)
_ENDS = re.compile(r"ends this conversation", re.I)
_WORDS = ("the", "result", "check", "limit", "energy", "sign", "factor", "state", "value", "field", "order")


def request_seed(seed: int, body: dict[str, Any], occurrence: int = 0) -> int:
    """A seed for one request's random reply: from the run's seed and what the request says (and how
    often the same request was seen), never from the order requests arrive in — so concurrent
    requests (a critic beside the workers) get the same replies in every run. The instructions and
    the tools' descriptions are prose, not what is said: rewording a prompt does not reshuffle a
    seed's run (the tools' names and fields still count)."""
    def plain(x: Any) -> Any:     # the server numbers tool calls in arrival order: not part of what is said
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items() if k not in ("id", "tool_call_id", "description")}
        return [plain(v) for v in x] if isinstance(x, list) else x

    convo = [m for m in body.get("messages", []) if m.get("role") not in ("system", "developer")]
    said = plain([convo, body.get("tools", [])])
    digest = hashlib.sha256(json.dumps([seed, occurrence, said], sort_keys=True, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def ids_in(body: dict[str, Any]) -> dict[str, list[str]]:
    """Ids (``XX-n``) the conversation mentions (not the system prompt, whose examples are not real
    ids), by kind, in first-seen order — except those it quotes (``'WH-9'``): a server quotes the
    ids it refuses ("unknown id 'WH-9'"), and a model does not use those again."""
    found: dict[str, list[str]] = {}
    convo = [m for m in body.get("messages", []) if m.get("role") not in ("system", "developer")]
    text = json.dumps(convo)
    refused = set(_QUOTED.findall(text))
    for m in _ID.finditer(text):
        if m.group(0) in refused:
            continue
        ids = found.setdefault(m.group(1), [])
        if m.group(0) not in ids:
            ids.append(m.group(0))
    return found


@dataclass
class Fuzz:
    """One request's generator: its random source, the schema's definitions, the ids in play."""

    rng: random.Random
    defs: dict[str, Any] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)
    id_rate: float = 0.9        # how often an id field gets a known id (else a made-up one)

    def value(self, schema: Any, *, kinds: list[str] | None = None, depth: int = 0) -> Any:
        if not isinstance(schema, dict):
            return self.rng.choice([0, "x", True, None])
        kinds = _KIND.findall(schema.get("description", "")) or kinds
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            return self.value(self.defs.get(name, {}), kinds=kinds, depth=depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = schema[key]
                if depth > 6:      # deep down, prefer a branch that does not recurse
                    options = [o for o in options if "$ref" not in o] or options
                concrete = [o for o in options if o.get("type") != "null"]
                pick = self.rng.choice(concrete) if concrete and self.rng.random() < 0.8 else self.rng.choice(options)
                return self.value(pick, kinds=kinds, depth=depth + 1)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for sub in schema["allOf"]:
                merged.update(self.defs.get(sub["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in sub else sub)
            return self.value(merged, kinds=kinds, depth=depth + 1)
        typ = schema.get("type")
        if isinstance(typ, list):
            typ = self.rng.choice([t for t in typ if t != "null"] or typ)
        if typ is None:
            typ = "object" if "properties" in schema else "string"
        return getattr(self, f"_{typ}", lambda *a, **k: None)(schema, kinds=kinds, depth=depth)

    def _object(self, schema: dict[str, Any], *, kinds: list[str] | None, depth: int) -> dict[str, Any]:
        required = set(schema.get("required", []))
        out = {}
        for name, sub in schema.get("properties", {}).items():
            if name in required or self.rng.random() < (0.6 if depth < 4 else 0.2):
                out[name] = self.value(sub, depth=depth + 1)
        return out

    def _array(self, schema: dict[str, Any], *, kinds: list[str] | None, depth: int) -> list[Any]:
        lo = schema.get("minItems", 0)
        if kinds and lo == 0:
            if not any(self.ids.get(k) for k in kinds):       # nothing of that kind in play: a model names none
                return []
            if self.rng.random() < 0.8:                       # a list of ids is rarely meant to be empty
                lo = 1
        hi = schema.get("maxItems", lo + (3 if depth < 4 else 1))
        return [self.value(schema.get("items", {}), kinds=kinds, depth=depth + 1)
                for _ in range(self.rng.randint(lo, max(lo, hi)))]

    def _string(self, schema: dict[str, Any], *, kinds: list[str] | None, depth: int) -> str:
        if kinds:
            known = [i for k in kinds for i in self.ids.get(k, [])]
            if known and self.rng.random() < self.id_rate:
                return self.rng.choice(known)
            return f"{self.rng.choice(kinds)}-{self.rng.randint(1, 9)}"
        lo = schema.get("minLength", 1)
        hi = schema.get("maxLength", max(lo, 60))
        words: list[str] = []
        while len(" ".join(words)) < lo or (len(" ".join(words)) < hi and self.rng.random() < 0.8):
            words.append(self.rng.choice(_WORDS))
        return " ".join(words)[:hi] or "a" * lo

    def _integer(self, schema: dict[str, Any], **_: Any) -> int:
        lo = int(schema.get("minimum", schema.get("exclusiveMinimum", -101) + 1))
        hi = int(schema.get("maximum", schema.get("exclusiveMaximum", 101) - 1))
        return self.rng.randint(lo, max(lo, hi))

    def _number(self, schema: dict[str, Any], **_: Any) -> float:
        lo = float(schema.get("minimum", schema.get("exclusiveMinimum", -100.0)))
        hi = float(schema.get("maximum", schema.get("exclusiveMaximum", 100.0)))
        return self.rng.uniform(lo, hi)

    def _boolean(self, schema: dict[str, Any], **_: Any) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], **_: Any) -> None:
        return None


def pick_tool(tools: list[dict[str, Any]], body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A random tool, favouring those not yet called in this conversation (novelty, as coverage-
    guided fuzzers do): multi-step flows (document, then run, then submit) then happen at random.
    As a model does, it calls a tool the server just refused less often, and the longer the
    conversation the likelier it ends it with the tool described as ending it (pydantic-ai's
    output tools say "The final response which ends this conversation")."""
    messages = body.get("messages", [])
    names = {tc.get("id"): tc.get("function", {}).get("name") for m in messages for tc in m.get("tool_calls") or []}
    called = set(names.values())
    refused = {names.get(m.get("tool_call_id")) for m in messages if m.get("role") == "tool"
               and _REFUSAL.search(str(m.get("content", "")))}
    turns = sum(m.get("role") == "assistant" for m in messages)
    weights = []
    for t in tools:
        w = 1.0 if t["name"] in called else 3.0
        if t["name"] in refused:
            w /= 3
        if _ENDS.search(t.get("description") or ""):
            w *= 1 + turns
        weights.append(w)
    return rng.choices(tools, weights=weights)[0]


def instance(schema: dict[str, Any], rng: random.Random, *, ids: dict[str, list[str]] | None = None,
             defs: dict[str, Any] | None = None) -> Any:
    """A random value valid under ``schema`` (the JSON-schema subset pydantic emits for tools)."""
    defs = defs if defs is not None else (schema.get("$defs") or schema.get("definitions") or {})
    return Fuzz(rng, defs, ids or {}).value(schema)
