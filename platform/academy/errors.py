"""Error pages for people and JSON errors for the API: never a platform stack trace."""
from __future__ import annotations

from flask import Flask, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from academy import MAX_REQUEST_BYTES


def _handle(exc: HTTPException) -> ResponseReturnValue:
    message = exc.description or exc.name
    if isinstance(exc, RequestEntityTooLarge):
        message = (f"The request is larger than {MAX_REQUEST_BYTES // 1024} KB; "
                   f"code may be at most 256 KB.")
    if request.blueprint == "api" or request.path.startswith("/api/"):
        response = jsonify(error=message)
        response.status_code = exc.code or 500
        for header in ("Retry-After", "Allow"):
            if exc.get_response().headers.get(header):
                response.headers[header] = exc.get_response().headers[header]
        return response
    return render_template("error.html", code=exc.code, name=exc.name, message=message), exc.code


def init_app(app: Flask) -> None:
    app.register_error_handler(HTTPException, _handle)
