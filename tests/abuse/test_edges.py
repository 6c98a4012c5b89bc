"""Input edges against the running server: redirect targets, hostile JSON, requests with no credentials,
absolute links. Where a redirect goes is decided from the request alone: those tests run on SQLite only;
the others on PostgreSQL too."""
from __future__ import annotations

import urllib.parse

import pytest

from tests.support.clients import Client
from tests.support.paths import EXERCISE
from tests.support.servers import LiveServer

# What browsers read as another site: they drop tabs and newlines from URLs, and read "\" as "/".
EVIL_NEXT = ["/\t/evil.example/phish", "/\n/evil.example/", "/\\evil.example/", "\\\\evil.example/",
             "//evil.example/", "https://evil.example/", "/%09/evil.example/", " //evil.example/"]


def _same_origin(location: str | None) -> bool:
    """Whether a browser following `Location: location` stays on this site (read the way it reads it)."""
    seen = "".join(ch for ch in (location or "") if ch not in "\t\n\r").replace("\\", "/").strip()
    parts = urllib.parse.urlsplit(seen)
    return not parts.scheme and not parts.netloc and seen.startswith("/") and not seen.startswith("//")


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
@pytest.mark.parametrize("target", EVIL_NEXT)
def test_next_never_leaves_the_site(shared_server: LiveServer, target: str) -> None:
    # Each client its own address: the per-address limits never interfere with what is tested here.
    server, octet = shared_server, 10 + EVIL_NEXT.index(target)
    guest = Client(server, f"127.0.0.{octet}")
    started = guest.form("/auth/guest", {"next": target})
    assert started.status == 302 and _same_origin(started.location), started.location
    newcomer = Client(server, f"127.0.0.{octet}")
    signed_up = newcomer.form("/auth/signup", {"email": f"n{octet}@example.org", "password": "password123",
                                               "name": f"Newcomer {octet}", "next": target})
    assert signed_up.status == 302 and _same_origin(signed_up.location), signed_up.location
    newcomer.form("/auth/signout")
    signed_in = newcomer.form("/auth/signin", {"email": f"n{octet}@example.org", "password": "password123",
                                               "next": target})
    assert signed_in.status == 302 and _same_origin(signed_in.location), signed_in.location


def test_next_within_the_site_is_kept(shared_server: LiveServer) -> None:
    guest = Client(shared_server, "127.0.0.30")
    started = guest.form("/auth/guest", {"next": "/lessons/mixed-precision/3?x=1"})
    assert started.location == "/lessons/mixed-precision/3?x=1"


def test_hostile_json_gets_400_with_a_plain_message(shared_server: LiveServer) -> None:
    learner = Client(shared_server, "127.0.0.31").guest()
    cases = {
        b"[" * 100_000: "nested more than",
        ('{"exercise": "%s", "code": "\\ud800"}' % EXERCISE).encode(): "lone surrogate",
        ('{"exercise": "%s", "code": "caf\xe9"}' % EXERCISE).encode("latin-1"): "not UTF-8",
        ('{"exercise": "%s", "code": "x"}' % EXERCISE).encode("utf-16"): "not UTF-8",
        b'{"exercise": ': "not valid JSON",
    }
    for body, says in cases.items():
        for url, method in (("/api/submissions", "POST"), (f"/api/drafts/{EXERCISE}", "PUT")):
            response = learner.api(method, url, body=body)
            assert response.status == 400, (body[:40], response.status, response.text[:300])
            assert says in response.json()["error"], (body[:40], response.json())
    assert "Traceback" not in shared_server.logs()
    assert learner.api("GET", "/api/submissions").json() == {"submissions": []}


def test_no_credentials_is_401_not_a_csrf_failure(shared_server: LiveServer) -> None:
    stranger = Client(shared_server, "127.0.0.32")
    for method, url in (("POST", "/api/submissions"), ("PUT", f"/api/drafts/{EXERCISE}")):
        response = stranger.request(method, url, b'{"exercise": "x", "code": "y"}',
                                    {"Content-Type": "application/json"})
        assert response.status == 401, (url, response.status, response.text)
        assert "Sign in" in response.json()["error"]


def test_absolute_links_never_come_from_a_host_header_a_client_chose(shared_server: LiveServer) -> None:
    page = "/lessons/mixed-precision/what-mixed-precision-means"
    forged = Client(shared_server, "127.0.0.33").request("GET", page, headers={"Host": "evil.example"})
    assert forged.status == 200 and "evil.example" not in forged.text
    assert f'hreflang="it" href="/it{page}"' in forged.text  # a path: still right for the browser that asked
    # The host the server answers on by default (DLA_ALLOWED_HOSTS: localhost, 127.0.0.1, ::1) keeps its links.
    own = Client(shared_server, "127.0.0.33").get(page)
    assert f'hreflang="it" href="http://127.0.0.1:{shared_server.port}/it{page}"' in own.text
