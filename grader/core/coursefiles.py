"""Reading one course file: YAML, checked against its JSON Schema (schemas/<name>.json), its defaults filled
in, and any mistake told as the instructor wrote it: the file, where in it, and what was expected.

The schemas carry a few annotations of their own, which a validator ignores and the messages use:
`x-item` (an array's or a map's items, in words: "check"), `x-name` (a key as a message names it: "check
id"), `x-expected` (what a value must be, in words) and `x-unknown` (the message for an unknown key)."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from grader.core import jsonschemas

if TYPE_CHECKING:
    from jsonschema import ValidationError

# libyaml's safe loader where PyYAML has it (its wheels do): the same documents at a fifth of the CPU (the
# whole course, read per grading on the host: 0.12 CPU-s with the pure-Python loader, 0.02 with libyaml).
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TYPE_WORDS = {"string": "a text", "array": "a list", "object": "a mapping of keys", "integer": "a whole number",
              "number": "a number", "boolean": "true or false", "null": "empty"}


class CourseError(Exception):
    """The course files are malformed; the message names the file and the problem."""


def parse_yaml(text: str) -> Any:
    """`yaml.safe_load(text)`, by libyaml where it is there; raises yaml.YAMLError. A document libyaml refuses
    is read again by the pure-Python loader, whose error quotes the offending line under a caret."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        if _FAST_LOADER is yaml.SafeLoader:
            raise
        return yaml.load(text, Loader=yaml.SafeLoader)


def read(path: Path, schema: str, *, optional: bool = False) -> dict[str, Any] | None:
    """The file's mapping, valid against schemas/<schema>.json, with the schema's defaults where a key is
    absent. None for a missing `optional` file; else raises CourseError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if optional:
            return None
        raise CourseError(f"{path}: file is missing") from None
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise CourseError(f"{path}: not valid YAML: {exc}") from None
    return checked(data, schema, path)


def checked(data: Any, schema: str, path: Path | str) -> dict[str, Any]:
    """`data` (as read from `path`) valid against schemas/<schema>.json, its defaults filled in."""
    data = _keys_as_text(data)  # YAML reads `1:` as a number; every key of a course file is a name
    found = list(jsonschemas.errors(data, schema))
    if found:
        error = min(found, key=lambda e: _reading_order(data, list(e.absolute_path), str(e.validator)))
        raise CourseError(f"{path}: {in_words(error, jsonschemas.schema(schema), data)}")
    filled: dict[str, Any] = _with_defaults(data, jsonschemas.schema(schema))
    return filled


_FIRST = {"type": 0, "additionalProperties": 1, "required": 2}


def _reading_order(data: Any, path: list[Any], keyword: str) -> tuple[int, ...]:
    """Where an error is, as the file reads: the first mistake from the top is told, and within one item what
    it holds (a bad id) before what it lacks (a missing key)."""
    positions = []
    for step in path:
        positions.append(step if isinstance(step, int) else list(data).index(step))
        data = data[step]
    return (*positions, 1 << 30, _FIRST.get(keyword, 3))


def _keys_as_text(data: Any) -> Any:
    if isinstance(data, dict):
        return {str(key): _keys_as_text(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_keys_as_text(value) for value in data]
    return data


def _with_defaults(data: Any, schema: dict[str, Any]) -> Any:
    if isinstance(data, dict):
        properties = schema.get("properties", {})
        more = schema.get("additionalProperties")
        for key, value in data.items():
            sub = properties.get(key, more if isinstance(more, dict) else None)
            if sub is not None:
                data[key] = _with_defaults(value, sub)
        for key, sub in properties.items():
            if key not in data and "default" in sub:
                data[key] = _with_defaults(copy.deepcopy(sub["default"]), sub)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [_with_defaults(value, schema["items"]) for value in data]
    return data


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    if isinstance(value, dict):
        return TYPE_WORDS["object"]
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _where(root: dict[str, Any], instance: Any, path: list[Any]) -> tuple[list[str], list[str]]:
    """(the items on the way, in words: ["check 'runs'"], the keys since the last of them: ["limits"])."""
    items: list[str] = []
    keys: list[str] = []
    node: dict[str, Any] = root
    for step in path:
        if isinstance(step, int):
            item = instance[step]
            name = node.get("x-item", "item")
            label = f"'{item['id']}'" if isinstance(item, dict) and isinstance(item.get("id"), (str, int)) \
                else str(step + 1)
            items.append(f"{name} {label}")
            keys = []
            node = node.get("items", {})
        elif step in node.get("properties", {}):
            keys.append(step)
            node = node["properties"][step]
        else:  # a map keyed by ids (a translation's checks, options)
            items.append(f"{node.get('x-item', 'key')} '{step}'")
            keys = []
            more = node.get("additionalProperties")
            node = more if isinstance(more, dict) else {}
        instance = instance[step]
    return items, keys


def _expected(error: ValidationError) -> str:
    # The stubs allow an unset validator_value; an error jsonschema reported always has one.
    schema, kind, value = error.schema, error.validator, cast(Any, error.validator_value)
    if isinstance(schema, dict) and "x-expected" in schema:
        return str(schema["x-expected"])
    if kind == "type":
        return " or ".join(TYPE_WORDS.get(t, t) for t in ([value] if isinstance(value, str) else value))
    if kind == "enum":
        return "one of " + ", ".join(str(v) for v in value)
    if kind == "minLength":
        return "a text that is not empty"
    if kind == "minItems":
        return f"a list of at least {value}"
    if kind in ("minimum", "exclusiveMinimum"):
        return f"{'at least' if kind == 'minimum' else 'more than'} {value}"
    return error.message


def in_words(error: ValidationError, root: dict[str, Any], data: Any) -> str:
    """A schema error as an instructor reads it: "check 'runs': evidence must be one of outside, learner
    (found 'trust-me')", "missing required key 'title'", "unknown key(s) sumary (the keys here: ...)"."""
    items, keys = _where(root, data, list(error.absolute_path))
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance: Any = error.instance  # set on every error jsonschema reports (the stubs allow unset)
    where = ", ".join(items) + ": " if items else ""
    if error.validator == "required":
        missing = next(key for key in cast(Any, error.validator_value) if key not in instance)
        within = f" in '{'.'.join(keys)}'" if keys else ""
        return f"{where}missing required key '{missing}'{within}"
    if error.validator == "additionalProperties":
        known = schema.get("properties", {})
        unknown = [str(key) for key in instance if key not in known]
        if "x-unknown" in schema:
            return where + str(schema["x-unknown"]).format(key=unknown[0])
        within = f" in '{'.'.join(keys)}'" if keys else ""
        return f"{where}unknown key(s) {', '.join(unknown)}{within} (the keys here: {', '.join(sorted(known))})"
    name = schema.get("x-name") or (f"'{'.'.join(keys)}'" if keys else "")
    if not name:
        name, where = (items[-1], ", ".join(items[:-1]) + ": " if len(items) > 1 else "") if items \
            else ("the file", "")
    if error.validator == "pattern":
        return f"{where}{name} {_shown(error.instance)} must be {_expected(error)}"
    return f"{where}{name} must be {_expected(error)} (found {_shown(error.instance)})"
