"""The JSON Schemas under schemas/, each read once per process and its validator made once, then reused:
jsonschema's `validate()` re-checks the schema itself and builds a new validator on every call (about 0.1
CPU-s per verdict, three times per grading, before this). The course's files are read against them too
(coursefiles.py)."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

FOLDER = Path(__file__).parent / "schemas"


@cache
def schema(name: str) -> dict[str, Any]:
    """schemas/<name>.json, parsed."""
    parsed: dict[str, Any] = json.loads((FOLDER / f"{name}.json").read_text())
    return parsed


@cache
def _validator(name: str, definition: str | None) -> Validator:
    import jsonschema  # here, not at the top: the web app's commands import result.py and need no schema

    whole = schema(name)
    part = whole if definition is None else {**whole["$defs"][definition], "$defs": whole["$defs"]}
    # Not `cls.check_schema(part)` here: 30 ms for the course's eight schemas, on the web app's first page.
    # tests/course/test_course_schemas.py checks every schema against its metaschema instead.
    return jsonschema.validators.validator_for(part)(part)


def errors(instance: Any, name: str, definition: str | None = None) -> Iterator[ValidationError]:
    """Every error of `instance` against schemas/<name>.json (or one of its `$defs`)."""
    return _validator(name, definition).iter_errors(instance)


def validate(instance: Any, name: str, definition: str | None = None) -> None:
    """`jsonschema.validate(instance, schema)` against schemas/<name>.json (or one of its `$defs`), with the
    validator made once: raises the same jsonschema.ValidationError, the best match of the errors."""
    from jsonschema.exceptions import best_match

    error = best_match(errors(instance, name, definition))
    if error is not None:
        raise error
