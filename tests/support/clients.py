"""HTTP clients of a live server (tests.support.servers): each from its own loopback address, with its own
cookies and the page's CSRF token, like people on different machines."""
from __future__ import annotations

import http.client
import json as jsonlib  # Client.request takes a `json` argument
import re
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from tests.support.apps import name_of
from tests.support.paths import EXERCISE, SOLUTION

if TYPE_CHECKING:
    from tests.support.servers import LiveServer


class Response:
    def __init__(self, raw: http.client.HTTPResponse):
        self.status = raw.status
        self.headers = raw.headers
        self.body = raw.read()

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.body)

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")


class Client:
    """One browser (or script): its own source address, its own cookie, the page's CSRF token."""

    def __init__(self, server: LiveServer, address: str = "127.0.0.1", forwarded_for: str | None = None,
                 token: str | None = None):
        self.server, self.address, self.forwarded_for, self.token = server, address, forwarded_for, token
        self.cookies: dict[str, str] = {}  # what the server set: the session cookie, the device cookie

    @property
    def cookie(self) -> str | None:
        """The session cookie, "session=...": what a thief copies (set it to replay one)."""
        return f"session={self.cookies['session']}" if "session" in self.cookies else None

    @cookie.setter
    def cookie(self, value: str | None) -> None:
        self.cookies.pop("session", None)
        if value:
            self.cookies["session"] = value.split("=", 1)[1]

    def request(self, method: str, url: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60,
                                                source_address=(self.address, 0))
        sent = dict(headers or {})
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        if self.forwarded_for:
            sent["X-Forwarded-For"] = self.forwarded_for
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        try:
            connection.request(method, url, body=body, headers=sent)
            response = Response(connection.getresponse())
        finally:
            connection.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, value = header.split(";", 1)[0].partition("=")
            gone = not value or "max-age=0" in header.lower() or "expires=thu, 01 jan 1970" in header.lower()
            if gone:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        return response

    def get(self, url: str) -> Response:
        return self.request("GET", url)

    def csrf(self) -> str:
        return re.search(r'name="csrf-token" content="([^"]+)"', self.get("/").text).group(1)

    def form(self, url: str, data: dict[str, str] | None = None, csrf: bool = True) -> Response:
        fields = {**({"csrf_token": self.csrf()} if csrf else {}), **(data or {})}
        return self.request("POST", url, urllib.parse.urlencode(fields).encode(),
                            {"Content-Type": "application/x-www-form-urlencoded"})

    def api(self, method: str, url: str, json: Any = None, body: bytes | None = None) -> Response:
        headers = {"Content-Type": "application/json"}
        if not self.token:
            headers["X-CSRF-Token"] = self.csrf()
        payload = body if body is not None else (jsonlib.dumps(json).encode() if json is not None else None)
        return self.request(method, url, payload, headers)

    def guest(self) -> Client:
        response = self.form("/auth/guest")
        assert response.status == 302, (response.status, response.text[-500:])
        return self

    def signup(self, email: str, password: str = "password123", name: str | None = None) -> Response:
        return self.form("/auth/signup", {"email": email, "password": password,
                                          "name": name if name is not None else name_of(email)})

    def signin(self, email: str, password: str = "password123") -> Response:
        return self.form("/auth/signin", {"email": email, "password": password})

    def submit(self, code: str = SOLUTION, exercise: str = EXERCISE) -> Response:
        return self.api("POST", "/api/submissions", {"exercise": exercise, "code": code})

    def wait(self, submission_id: int, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            state = self.api("GET", f"/api/submissions/{submission_id}").json()
            if state["status"] in ("done", "error"):
                return state
            assert time.monotonic() < deadline, f"submission {submission_id} still {state['status']}"
            time.sleep(0.2)
