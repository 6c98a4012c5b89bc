"""The JSON Schemas under schemas/, each read and checked once per process, then reused: jsonschema's
`validate()` re-checks the schema itself and builds a new validator on every call (about 0.1 CPU-s per
verdict, three times per grading, before this)."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

FOLDER = Path(__file__).parent / "schemas"


@cache
def schema(name: str) -> dict[str, Any]:
    """schemas/<name>.json, parsed."""
    return json.loads((FOLDER / f"{name}.json").read_text())


@cache
def _validator(name: str, definition: str | None) -> Validator:
    import jsonschema  # here, not at the top: the web app's commands import result.py and need no schema

    whole = schema(name)
    part = whole if definition is None else {**whole["$defs"][definition], "$defs": whole["$defs"]}
    cls = jsonschema.validators.validator_for(part)
    cls.check_schema(part)
    return cls(part)


def validate(instance: Any, name: str, definition: str | None = None) -> None:
    """`jsonschema.validate(instance, schema)` against schemas/<name>.json (or one of its `$defs`), with the
    validator made once: raises the same jsonschema.ValidationError, the best match of the errors."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name, definition).iter_errors(instance))
    if error is not None:
        raise error
