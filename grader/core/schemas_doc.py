"""docs/authoring.md's key tables, one per course file, rendered from the schemas the loader reads them with
(schemas/*.json): `python -m grader.core.schemas_doc` prints them, `--write` puts each between its markers
in docs/authoring.md (`<!-- key-table: NAME ... -->` ... `<!-- /key-table: NAME -->`), and
tests/course/test_course_schemas.py fails while the docs differ from what this writes."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from grader.core import jsonschemas
from grader.core.coursefiles import TYPE_WORDS

# The course's files, in the order the docs table them: schemas/<name>.json.
FILES = ("course", "lesson", "quiz", "exercise",
         "course.translation", "lesson.translation", "quiz.translation", "exercise.translation")
DOC = Path(__file__).resolve().parents[2] / "docs" / "authoring.md"
MARKED = re.compile(r"(<!-- key-table: (?P<name>[\w.]+)[^\n]*-->\n)(?P<table>.*?)(<!-- /key-table: (?P=name) -->)",
                    re.S)


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " or ".join(f"`{value}`" for value in schema["enum"])
    if "x-expected" in schema and "pattern" not in schema:
        return str(schema["x-expected"])
    kinds = schema.get("type")
    words = " or ".join(TYPE_WORDS.get(kind, kind) for kind in ([kinds] if isinstance(kinds, str) else kinds or []))
    if "x-expected" in schema:
        words += f" ({schema['x-expected']})"
    items = schema.get("items")
    if isinstance(items, dict) and "array" in (kinds or ()):
        inner = "mappings" if items.get("type") == "object" else _type(items).replace("a text", "texts", 1)
        words = words.replace("a list", f"a list of {inner}")
    return words or "any"


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema or schema["default"] in ({}, None):
        return ""
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`"


def _rows(schema: dict[str, Any], prefix: str) -> list[str]:
    rows = []
    required = set(schema.get("required", ()))
    for key, sub in schema.get("properties", {}).items():
        name = f"{prefix}{key}"
        meaning = sub.get("description", "").replace("|", "\\|")
        rows.append(f"| `{name}` | {'yes' if key in required else ''} | {_type(sub)} | {_default(sub)} | {meaning} |")
        items = sub.get("items")
        if isinstance(items, dict) and items.get("properties"):
            rows += _rows(items, f"{name}[].")
        more = sub.get("additionalProperties")
        if isinstance(more, dict) and more.get("properties"):
            rows += _rows(more, f"{name}.{sub.get('x-item', 'KEY').upper().replace(' ', '-')}-ID.")
        if sub.get("properties"):
            rows += _rows(sub, f"{name}.")
    return rows


def table(name: str) -> str:
    """The key table of schemas/<name>.json: every key, nested ones by their path (`checks[].id`)."""
    schema = jsonschemas.schema(name)
    head = [f"`{schema['title']}`: {schema['description']}", "",
            "| key | required | type | default | meaning |", "|---|---|---|---|---|"]
    return "\n".join(head + _rows(schema, ""))


def rewritten(text: str) -> str:
    """`text` (docs/authoring.md) with each marked table as the schemas make it now."""
    return MARKED.sub(lambda m: m.group(1) + table(m.group("name")) + "\n" + m.group(4), text)


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        DOC.write_text(rewritten(DOC.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if argv:
        print("usage: python -m grader.core.schemas_doc [--write]   (prints, or writes into docs/authoring.md, "
              "the course files' key tables)", file=sys.stderr)
        return 2
    print("\n\n".join(f"<!-- key-table: {name} -->\n{table(name)}\n<!-- /key-table: {name} -->" for name in FILES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
