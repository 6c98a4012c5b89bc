"""What the app accepts at its edges: the code a request sends (`code_field`) and JSON bodies.

Redirect targets are academy/redirects.py's (the language switch needs them too).

Each refusal is a learner-facing message: a 400, never a stack trace.
"""
from __future__ import annotations

import json
from typing import Any

from flask import Flask, Request, abort
from flask.json.provider import DefaultJSONProvider
from flask_babel import gettext
from werkzeug.exceptions import BadRequest

from grader.core.protocol import MAX_CODE_BYTES, CodeTooLarge, check_code_size

MAX_JSON_DEPTH = 32  # the API's bodies are two levels deep; anything near Python's recursion limit is hostile
# The largest request body (Flask's MAX_CONTENT_LENGTH): the largest submission plus a quarter for its JSON
# escaping (quotes, backslashes, newlines) and the other fields. Code that escaping makes longer still (\uXXXX
# for non-ASCII) is refused as too large here, before the code-size check (grader.core.protocol.check_code_size).
MAX_BODY_BYTES = MAX_CODE_BYTES + MAX_CODE_BYTES // 4


def code_field(data: dict[str, Any]) -> str:
    """The request's "code": Python source within the protocol's size, else a 400 or 413 saying why."""
    code = data.get("code")
    if not isinstance(code, str):
        abort(400, description=gettext('"code" must be a string of Python source.'))
    try:
        check_code_size(code)  # the protocol's one limit, as the grader's other edges apply it
    except CodeTooLarge:
        abort(413, description=gettext("The code is larger than %(size)s KB.", size=MAX_CODE_BYTES // 1024))
    if "\x00" in code:
        abort(400, description=gettext("The code contains a NUL character; send Python source text."))
    return code


class JSONBodyError(ValueError):
    """A request body that is not acceptable JSON: `reason` ("surrogate", "too-deep", "not-utf8") says why;
    the client reads it in the request's language (`_reason`)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _reason(reason: str) -> str:
    if reason == "surrogate":
        return gettext("The JSON holds a lone surrogate escape (such as \\ud800), which is not text; send valid "
                       "Unicode.")
    if reason == "too-deep":
        return gettext("The JSON is nested more than %(depth)s levels deep.", depth=MAX_JSON_DEPTH)
    return gettext("The body is not UTF-8 text; send JSON encoded as UTF-8.")


def _check_value(value: Any) -> None:
    """Depth at most MAX_JSON_DEPTH and no lone surrogates ("\\ud800" parses, but is not text: it cannot
    be stored or encoded as UTF-8). Iterative, so a hostile body cannot exhaust the stack here either."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise JSONBodyError("surrogate") from None
        elif isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise JSONBodyError("too-deep")
            children = item.items() if isinstance(item, dict) else ((None, v) for v in item)
            for key, child in children:
                if key is not None:
                    stack.append((key, depth))
                stack.append((child, depth + 1))


class StrictJSONProvider(DefaultJSONProvider):
    """Flask's JSON, but a body must be UTF-8 (no UTF-16/32 guessing), of bounded depth and valid text."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        if isinstance(s, (bytes, bytearray)):
            try:
                s = bytes(s).decode("utf-8")
            except UnicodeDecodeError:
                raise JSONBodyError("not-utf8") from None
        try:
            value = json.loads(s, **kwargs)
        except RecursionError:
            raise JSONBodyError("too-deep") from None
        _check_value(value)
        return value


class AcademyRequest(Request):
    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        if isinstance(e, JSONBodyError):
            raise BadRequest(description=_reason(e.reason))
        if e is None:  # not sent as application/json
            raise BadRequest(description=gettext('Send the body as JSON with "Content-Type: application/json".'))
        raise BadRequest(description=gettext("The body is not valid JSON (%(reason)s).", reason=str(e)))


def init_app(app: Flask) -> None:
    app.json = StrictJSONProvider(app)
    app.request_class = AcademyRequest
