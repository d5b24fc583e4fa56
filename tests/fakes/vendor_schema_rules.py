"""The vendors' documented rules for the JSON schemas a request may carry, as checkers.

Each checker returns the list of rule violations (empty: the schema is acceptable), so a
test failure names every broken rule with its path in the schema.

- OpenAI Structured Outputs, ``strict: true`` ("Supported schemas", platform.openai.com
  /docs/guides/structured-outputs): the root is an object, not ``anyOf``; every object
  sets ``additionalProperties: false`` and lists every property in ``required``; types
  are string, number, integer, boolean, object, array, null (also as a list), with
  ``enum``/``const``/``anyOf``/``$ref``/``$defs``; the only other keywords are
  ``description``, ``title``, string ``pattern``/``format``, number ``multipleOf``/
  ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` and array
  ``minItems``/``maxItems``; at most 5000 properties, 10 levels of nesting, 1000 enum
  values; the schema name matches ``^[a-zA-Z0-9_-]{1,64}$``.
- Gemini ``responseJsonSchema`` (ai.google.dev/gemini-api/docs/structured-output, "JSON
  Schema support"): the supported keywords are ``$id``, ``$defs``, ``$ref``, ``$anchor``,
  ``type``, ``format``, ``title``, ``description``, ``enum`` (strings and numbers),
  ``items``, ``prefixItems``, ``minItems``, ``maxItems``, ``minimum``, ``maximum``,
  ``anyOf``, ``oneOf``, ``properties``, ``additionalProperties``, ``required`` (and
  ``propertyOrdering``); anything else is not enforced.
- Anthropic tools (docs.anthropic.com/en/docs/agents-and-tools/tool-use, "Specifying
  tools"): ``name`` matches ``^[a-zA-Z0-9_-]{1,64}$``; ``input_schema`` is a JSON Schema
  whose root has ``"type": "object"``.
"""

from __future__ import annotations

import re
from typing import Any

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}

OPENAI_STRUCTURE = {"type", "properties", "required", "additionalProperties", "items"}
OPENAI_COMBINERS = {"enum", "const", "anyOf", "$ref", "$defs"}
OPENAI_ANNOTATIONS = {"description", "title"}
OPENAI_BY_TYPE = {
    "string": {"pattern", "format"},
    "number": {"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
    "integer": {"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
    "array": {"minItems", "maxItems"},
}
OPENAI_MAX_PROPERTIES = 5000
OPENAI_MAX_DEPTH = 10
OPENAI_MAX_ENUM_VALUES = 1000

GEMINI_KEYWORDS = {
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
}


def _types_of(node: dict[str, Any]) -> set[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    return set()


def _children(node: dict[str, Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, sub in (node.get("properties") or {}).items():
        found.append((f"properties.{name}", sub))
    if isinstance(node.get("items"), dict):
        found.append(("items", node["items"]))
    for key in ("anyOf", "oneOf", "prefixItems"):
        for index, sub in enumerate(node.get(key) or []):
            found.append((f"{key}[{index}]", sub))
    for name, sub in (node.get("$defs") or {}).items():
        found.append((f"$defs.{name}", sub))
    return found


def openai_strict_violations(name: str, schema: dict[str, Any]) -> list[str]:
    """Every OpenAI strict-mode rule ``schema`` (sent under ``name``) breaks."""
    problems: list[str] = []
    if not NAME.match(name):
        problems.append(f"name {name!r} does not match {NAME.pattern}")
    if "anyOf" in schema or _types_of(schema) != {"object"}:
        problems.append("root: must be an object, not anyOf")
    counts = {"properties": 0, "enum_values": 0}

    def visit(node: Any, path: str, depth: int) -> None:
        if not isinstance(node, dict):
            problems.append(f"{path}: not a schema object")
            return
        if depth > OPENAI_MAX_DEPTH:
            problems.append(f"{path}: nested deeper than {OPENAI_MAX_DEPTH} levels")
        types = _types_of(node)
        if "type" in node and (not types or not types <= _TYPES):
            problems.append(f"{path}: unsupported type {node['type']!r}")
        if "type" not in node and not {"enum", "const", "anyOf", "$ref"} & set(node):
            problems.append(f"{path}: neither a type nor enum/const/anyOf/$ref")
        allowed = OPENAI_STRUCTURE | OPENAI_COMBINERS | OPENAI_ANNOTATIONS
        for type_name in types:
            allowed |= OPENAI_BY_TYPE.get(type_name, set())
        for keyword in node:
            if keyword not in allowed:
                problems.append(f"{path}: keyword {keyword!r} is not supported in strict mode")
        if "object" in types:
            properties = node.get("properties") or {}
            counts["properties"] += len(properties)
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: additionalProperties must be false")
            missing = sorted(set(properties) - set(node.get("required") or []))
            if missing:
                problems.append(f"{path}: properties not in required: {missing}")
            extra = sorted(set(node.get("required") or []) - set(properties))
            if extra:
                problems.append(f"{path}: required names no property: {extra}")
        if "enum" in node:
            counts["enum_values"] += len(node["enum"])
        for child_path, child in _children(node):
            visit(child, f"{path}.{child_path}", depth + 1)

    visit(schema, "root", 1)
    if counts["properties"] > OPENAI_MAX_PROPERTIES:
        problems.append(f"{counts['properties']} properties, over {OPENAI_MAX_PROPERTIES}")
    if counts["enum_values"] > OPENAI_MAX_ENUM_VALUES:
        problems.append(f"{counts['enum_values']} enum values, over {OPENAI_MAX_ENUM_VALUES}")
    return problems


def gemini_violations(schema: dict[str, Any]) -> list[str]:
    """Every keyword of ``schema`` outside Gemini's ``responseJsonSchema`` subset, and every
    ``enum`` holding something other than strings and numbers."""
    problems: list[str] = []

    def visit(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            problems.append(f"{path}: not a schema object")
            return
        for keyword in node:
            if keyword not in GEMINI_KEYWORDS:
                problems.append(f"{path}: keyword {keyword!r} is not in Gemini's subset")
        for value in node.get("enum", []):
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                problems.append(f"{path}: enum value {value!r} is not a string or number")
        if isinstance(node.get("additionalProperties"), dict):
            visit(node["additionalProperties"], f"{path}.additionalProperties")
        for child_path, child in _children(node):
            visit(child, f"{path}.{child_path}")

    visit(schema, "root")
    return problems


def anthropic_tool_violations(tool: dict[str, Any]) -> list[str]:
    """Every rule of Anthropic's tool definition that ``tool`` breaks."""
    problems: list[str] = []
    name = tool.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(f"name {name!r} does not match {NAME.pattern}")
    if "description" in tool and not isinstance(tool["description"], str):
        problems.append("description must be text")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append("input_schema must be a JSON Schema with type 'object' at its root")
    unknown = set(tool) - {"name", "description", "input_schema", "cache_control", "type"}
    if unknown:
        problems.append(f"unknown tool fields {sorted(unknown)}")
    return problems
