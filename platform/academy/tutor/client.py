"""A client for any server that speaks the OpenAI-compatible Chat Completions API with streaming (vLLM,
llama.cpp's server, Ollama, TGI, `transformers serve`, the hosted services): POST {url}/chat/completions with
`stream: true`, read the server-sent events, yield the text as it comes.

Plain http.client, so that closing the generator closes the socket: the model server sees the disconnect and
stops generating (a learner's Stop, a timeout, a browser that went away all end the upstream request).
"""
from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import urlsplit


class TutorUnavailable(Exception):
    """The model server could not be reached, refused, or stayed silent too long; the message says which."""


@dataclass(frozen=True)
class Endpoint:
    url: str  # the API root, e.g. http://127.0.0.1:8090/v1
    model: str = ""
    api_key: str = ""
    connect_timeout_s: float = 3.0
    silence_timeout_s: float = 60.0  # before the first token, and between two
    answer_timeout_s: float = 120.0


@dataclass
class Chunk:
    text: str = ""
    finish_reason: str | None = None


def _connection(endpoint: Endpoint) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(endpoint.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TutorUnavailable(f"DLA_TUTOR_URL is not an http(s) URL: {endpoint.url!r}")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=endpoint.connect_timeout_s)
    return connection, parts.path.rstrip("/") + "/chat/completions"


def stream_chat(endpoint: Endpoint, messages: list[dict[str, str]], max_tokens: int) -> Iterator[Chunk]:
    """The answer to `messages`, piece by piece; the last piece carries the finish reason ("stop", "length").
    Raises TutorUnavailable when the server cannot be reached or is silent for longer than allowed."""
    connection, path = _connection(endpoint)
    body: dict = {"messages": messages, "stream": True, "max_tokens": max_tokens, "temperature": 0.2}
    if endpoint.model:
        body["model"] = endpoint.model
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    deadline = time.monotonic() + endpoint.answer_timeout_s
    try:
        try:
            connection.connect()
        except OSError as exc:
            raise TutorUnavailable(f"cannot connect to the model server at {endpoint.url}: {exc}") from exc
        connection.sock.settimeout(endpoint.silence_timeout_s)
        try:
            connection.request("POST", path, body=json.dumps(body), headers=headers)
            response = connection.getresponse()
        except (socket.timeout, TimeoutError) as exc:
            raise TutorUnavailable(f"the model server at {endpoint.url} sent nothing for "
                                   f"{endpoint.silence_timeout_s:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise TutorUnavailable(f"the model server at {endpoint.url} failed: {exc}") from exc
        if response.status != 200:
            detail = response.read(300).decode("utf-8", "replace")
            raise TutorUnavailable(f"the model server answered {response.status}: {detail}")
        yield from _events(response, endpoint, deadline)
    finally:
        connection.close()


def _events(response: http.client.HTTPResponse, endpoint: Endpoint, deadline: float) -> Iterator[Chunk]:
    while True:
        if time.monotonic() > deadline:
            yield Chunk(finish_reason="timeout")
            return
        try:
            raw = response.readline()
        except (socket.timeout, TimeoutError):
            raise TutorUnavailable(f"the model server went silent for {endpoint.silence_timeout_s:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise TutorUnavailable(f"the model server's stream broke: {exc}") from exc
        if not raw:
            return
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if "error" in event:
            raise TutorUnavailable(f"the model server reported: {str(event['error'])[:300]}")
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            yield Chunk(str(delta.get("content") or ""), choice.get("finish_reason"))
