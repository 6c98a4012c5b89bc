"""LTI 1.3 attacked (issue 51): request forgery through a registration's URLs, the login's redirect, forged log lines,
the claims the spec requires, deep linking by an institution-level role and by six answers at once, framing by
another registration, over-long values on PostgreSQL, and a registration edited, removed and registered again.

The tool is served by a real server thread, the LMSes are the lti1p3platform ones of tests/lti/platform.py, and the
"internal" services are real HTTP servers on loopback: one posing as a cloud metadata service (a secret in its
body, and a redirect to it), and a port where nothing listens.
"""
from __future__ import annotations

import base64
import http.server
import ipaddress
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select
from werkzeug.serving import make_server

from academy import jobs
from academy.data.db import get_session
from academy.data.models import JobStatus, LtiGradeLink, LtiIdentity, LtiPlatform, Submission, User
from academy.lti import outbound
from tests.lti.platform import Lms, serve
from tests.support.apps import new_session, ready_app
from tests.support.databases import postgres_bin
from tests.support.lti import Forms, follow_link, launch
from tests.support.paths import EXERCISE
from tests.support.processes import free_port

SECRET = "SecretAccessKey=wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"


class Internal(http.server.ThreadingHTTPServer):
    """A metadata service on loopback: its secret at /latest/meta-data/..., and /redirect sending there. It counts
    every request by path."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        internal = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                internal.hits[self.path] = internal.hits.get(self.path, 0) + 1
                if self.path.startswith("/redirect"):
                    self.send_response(302)
                    self.send_header("Location", f"{internal.base}/latest/meta-data/target")
                    self.end_headers()
                    return
                body = SECRET.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET  # noqa: N815 - the token endpoint's POST gets the same answer

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server_port}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The tool served on loopback (DLA_LTI_ALLOW_HTTP: its LMSes are local), LMS A and B registered, the internal
    service, and registrations whose key set and token URLs are internal: its secret, its redirect, a closed port."""
    from academy.lti import PlatformForm, register_platform

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = ready_app({"INSTANCE_PATH": str(tmp_path_factory.mktemp("lti-security") / "instance"), "SANDBOX": "local",
                     "SECRET_KEY": "test", "INSECURE_COOKIES": True, "PUBLIC_URL": base, "REQUEUE_ON_START": False,
                     "LTI_ALLOW_HTTP": True, "WARM_POOL": 0})
    lms_a = Lms("https://lms-a.example", client_id="tool-a", deployment_id="dep-a")
    lms_b = Lms("https://lms-b.example", client_id="tool-b", deployment_id="dep-b")
    internal = Internal()
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with serve(lms_a.app) as a, serve(lms_b.app) as b:
            ids = {}
            with app.app_context():
                for lms, origin in ((lms_a, a), (lms_b, b)):
                    lms.base = origin
                    lms.connect(base)
                    ids[lms.client_id] = register_platform(PlatformForm(
                        lms.issuer, lms.issuer, lms.client_id, f"{origin}/auth", lms.token_url(), f"{origin}/jwks",
                        (lms.deployment_id,))).id
                for name, url in (("secret", f"{internal.base}/latest/meta-data/iam/security-credentials/role"),
                                  ("redirect", f"{internal.base}/redirect"), ("closed", f"{closed}/jwks")):
                    ids[name] = register_platform(PlatformForm(
                        name, f"https://{name}.example", name, f"{a}/auth", url, url, ("dep",))).id
                from academy.data.accounts import create_account

                create_account("teacher@example.org", "password123", role="instructor", name="Teacher")
                get_session().commit()
            teacher = new_session(app)
            teacher.signin("teacher@example.org")
            yield {"app": app, "base": base, "a": lms_a, "b": lms_b, "internal": internal, "ids": ids,
                   "teacher": teacher}
    finally:
        server.shutdown()
        thread.join()
        internal.stop()
        jobs.shutdown(app)


def _login(browser: requests.Session, base: str, issuer: str, client_id: str) -> dict[str, str]:
    """The tool's login, as an anonymous visitor: the parameters it sends the browser to the LMS with."""
    answer = browser.get(f"{base}/lti/login", params={"iss": issuer, "client_id": client_id, "login_hint": "x",
                                                      "target_link_uri": f"{base}/lti/launch"},
                         allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text[-500:]
    return {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["Location"]).query).items()}


def _claims(issuer: str, client_id: str, nonce: str, **more: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": issuer, "aud": client_id, "sub": "attacker", "nonce": nonce, "iat": now, "exp": now + 600,
            DEPLOYMENT: "dep", "https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiResourceLinkRequest",
            "https://purl.imsglobal.org/spec/lti/claim/version": "1.3.0",
            "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "r"}, **more}


def _any_key() -> bytes:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _refusal(page: requests.Response) -> tuple[int, str]:
    found = re.search(r'id="lti-refused"[^>]*>(.*?)</p>', page.text, re.S)
    assert found, page.text[-800:]
    return page.status_code, found.group(1)


# -- 1. request forgery through a registration's URLs ----------------------------------------------------------------

def test_an_internal_key_set_url_never_shows_its_answer_nor_tells_a_closed_port(tool: dict[str, Any]) -> None:
    """The attack of the issue, against the running server: an anonymous visitor logs in through a registration
    whose key set URL is internal and posts any JWT with the login's nonce. The refusal is the same fixed sentence
    whether the URL answered a secret, a redirect, or nothing listens; the redirect is not followed."""
    key = _any_key()
    seen = {}
    for name in ("secret", "redirect", "closed"):
        browser = requests.Session()
        params = _login(browser, tool["base"], f"https://{name}.example", name)
        token = jwt.encode(_claims(f"https://{name}.example", name, params["nonce"]), key, algorithm="RS256",
                           headers={"kid": "k1"})
        refused = browser.post(f"{tool['base']}/lti/launch", data={"id_token": token, "state": params["state"]},
                       allow_redirects=False, timeout=30)
        seen[name] = _refusal(refused)
        assert "wJalrXUtnFEMI" not in refused.text and "SecretAccessKey" not in refused.text
        assert str(urlsplit(tool["internal"].base).port) not in refused.text and "127.0.0.1" not in refused.text
    assert seen["secret"] == seen["redirect"] == seen["closed"], seen
    assert seen["secret"][0] == 502 and "key set could not be fetched" in seen["secret"][1]
    assert tool["internal"].hits.get("/latest/meta-data/iam/security-credentials/role") == 1  # it was asked...
    assert tool["internal"].hits.get("/redirect") == 1 and "/latest/meta-data/target" not in tool["internal"].hits


def test_an_internal_token_url_leaves_a_fixed_error_on_the_grade_link(tool: dict[str, Any]) -> None:
    """Grade passback to a registration whose token URL is internal: the stored error (shown to instructors) is one
    fixed sentence, the same for the secret-answering service and the closed port, and names neither."""
    from academy import lti

    app = tool["app"]
    errors = {}
    with app.app_context():
        db = get_session()
        for name in ("secret", "closed"):
            user = User(role="learner")
            identity = LtiIdentity(platform_id=tool["ids"][name], deployment_id="dep", sub=f"{name}-learner",
                                   user=user)
            db.add(identity)
            db.flush()
            db.add(Submission(user_id=user.id, exercise_id=EXERCISE, code="x", status=JobStatus.DONE,
                              result_json=json.dumps({"score": 0.5})))
            claim = {"scope": [lti.SCORE_SCOPE], "lineitem": f"{tool['internal'].base}/latest/meta-data/x"}
            db.add(LtiGradeLink(identity_id=identity.id, user_id=user.id, resource_link_id="r", exercise_id=EXERCISE,
                                ags_json=json.dumps(claim)))
            db.commit()
            assert lti.send_best_score(user.id, EXERCISE) == 0
            errors[name] = db.scalar(select(LtiGradeLink.error).where(LtiGradeLink.user_id == user.id))
    assert errors["secret"] == errors["closed"] == "the LMS could not be reached, or did not take the score", errors
    page = tool["teacher"].client.get("/lti/platforms").get_data(as_text=True)
    assert errors["secret"] in page and "SecretAccessKey" not in page and "Error" not in page


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The tool as deployed: no DLA_LTI_ALLOW_HTTP; a campus network allowed (and, wrongly, link-local)."""
    app = ready_app({"INSTANCE_PATH": str(tmp_path_factory.mktemp("lti-strict") / "instance"), "SANDBOX": "local",
                     "SECRET_KEY": "test", "REQUEUE_ON_START": False, "WARM_POOL": 0,
                     "LTI_PRIVATE_NETWORKS": ("10.20.0.0/16", "169.254.0.0/16")})
    try:
        yield app
    finally:
        jobs.shutdown(app)


def _form(issuer: str, url: str, client: str = "c") -> dict[str, str]:
    return {"name": "X", "issuer": issuer, "client_id": client, "auth_login_url": url, "auth_token_url": url,
            "key_set_url": url, "deployment_ids": "d"}


def test_registration_refuses_urls_the_server_must_not_reach(strict: Any, tool: dict[str, Any]) -> None:
    """Without DLA_LTI_ALLOW_HTTP: http, loopback (by address or by name), metadata and private addresses are refused
    at registration, on the page and from the command line; a listed private network is accepted; with the setting
    (the tool fixture) http on loopback is."""
    from academy.data.accounts import create_account

    with strict.app_context():
        create_account("ops@example.org", "password123", role="instructor", name="Ops")
        get_session().commit()
    ops = new_session(strict)
    ops.signin("ops@example.org")
    internal = tool["internal"].base
    for url in (f"{internal}/jwks", "https://127.0.0.1/jwks", "https://localhost/jwks", "https://[::1]/jwks",
                "https://[::ffff:127.0.0.1]/jwks", "https://169.254.169.254/latest/meta-data/",
                "https://[fd00:ec2::254]/", "https://169.254.10.1/", "https://10.0.0.7/jwks", "https://192.168.1.1/",
                "https://100.64.0.1/", "https://[2002:7f00:1::]/", "https://0.0.0.0/", "https://user@lms.example/"):
        page = ops.post("/lti/platforms", data=_form("https://lms.example", url))
        assert page.status_code == 400, url
        cli = strict.test_cli_runner().invoke(args=[
            "lti-register", "--name", "X", "--issuer", "https://lms.example", "--client-id", "c",
            "--auth-login-url", url, "--auth-token-url", url, "--key-set-url", url])
        assert cli.exit_code != 0 and ("https:// URL" in cli.output or "network" in cli.output), (url, cli.output)
    assert ops.post("/lti/platforms", data=_form("https://lms.example", "https://10.20.3.4/jwks")).status_code == 303
    with strict.app_context():
        assert get_session().scalar(select(LtiPlatform).where(LtiPlatform.client_id == "c")) is not None


def test_the_address_rules() -> None:
    policy = outbound.Policy(private_networks=(ipaddress.ip_network("10.20.0.0/16"),
                                               ipaddress.ip_network("169.254.0.0/16")))
    refused = ["127.0.0.1", "::1", "10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254", "169.254.1.1",
               "fd00:ec2::254", "fe80::1", "100.64.0.1", "100.100.100.200", "224.0.0.1", "240.0.0.1", "0.0.0.0",
               "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:a9fe:a9fe::", "2002:7f00:1::",
               "64:ff9b::a9fe:a9fe", "::127.0.0.1", "fc00::1", "2001:0:4136:e378:8000:63bf:80ff:fffe"]
    for address in refused:
        assert not policy.address_allowed(ipaddress.ip_address(address)), address
    for address in ("93.184.216.34", "2606:4700::1111", "10.20.1.2"):
        assert policy.address_allowed(ipaddress.ip_address(address)), address
    development = outbound.Policy(allow_http=True, allow_loopback=True)
    assert development.address_allowed(ipaddress.ip_address("127.0.0.1"))
    assert not development.address_allowed(ipaddress.ip_address("169.254.169.254"))
    assert not development.address_allowed(ipaddress.ip_address("10.0.0.1"))


def test_the_address_is_checked_where_the_connection_landed(tool: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The session checks the address it actually connected to, whatever the URL said (a name that resolved
    elsewhere when checked, DNS rebinding): http allowed but loopback not, the internal service gets no request.
    Redirects, over-long and slow answers are refused too."""
    internal = tool["internal"]
    before = dict(internal.hits)
    no_loopback = outbound.session(outbound.Policy(allow_http=True, allow_loopback=False))
    for url in (f"{internal.base}/latest/meta-data/", f"http://localhost:{internal.server_port}/latest/meta-data/"):
        with pytest.raises(outbound.OutboundError, match="not allowed"):
            no_loopback.get(url)
    for url in (f"https://127.0.0.1:{internal.server_port}/", f"https://localhost:{internal.server_port}/"):
        with pytest.raises(outbound.OutboundError, match="not allowed"):  # before any TLS handshake
            outbound.session(outbound.Policy()).get(url)
    assert internal.hits == before
    with pytest.raises(outbound.OutboundError):
        outbound.session(outbound.Policy()).get(f"{internal.base}/latest/meta-data/")  # http: refused by its form
    development = outbound.session(outbound.Policy(allow_http=True, allow_loopback=True))
    with pytest.raises(outbound.OutboundError, match="redirect"):
        development.get(f"{internal.base}/redirect")
    assert "/latest/meta-data/target" not in internal.hits
    monkeypatch.setattr(outbound, "MAX_RESPONSE_BYTES", 10)
    with pytest.raises(outbound.OutboundError, match="too long"):
        development.get(f"{internal.base}/latest/meta-data/")
    monkeypatch.setattr(outbound, "MAX_RESPONSE_BYTES", 1 << 20)

    slow = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Dripping)
    thread = threading.Thread(target=slow.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setattr(outbound, "TOTAL_TIMEOUT_S", 1)
        started = time.monotonic()
        with pytest.raises(outbound.OutboundError, match="slow"):
            development.get(f"http://127.0.0.1:{slow.server_port}/")
        assert time.monotonic() - started < 4
    finally:
        slow.shutdown()
        slow.server_close()
        thread.join()


class _Dripping(http.server.BaseHTTPRequestHandler):
    """An answer one byte every 0.2 s, for ever (each read is quick: only the total bound stops it)."""

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.end_headers()
        try:
            for _ in range(100):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        pass


def test_key_sets_are_kept_and_fetched_again_for_an_unknown_kid(tool: dict[str, Any],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Two launches fetch LMS B's key set once; after B rotates its key, a launch signed with the new one fetches it
    again (a kid the kept set lacks), at most once per KEY_SET_REFRESH_S."""

    lms: Lms = tool["b"]
    lms.links["b-link"] = type(next(iter(lms.links.values()), None) or _link())("b-link", "B", {}, None)
    outbound.key_sets.clear()
    fetched = lms.jwks_requests
    for user in ("kept-1", "kept-2"):
        browser = requests.Session()
        assert launch(browser, follow_link(browser, lms, "b-link", user)).status_code == 303
    assert lms.jwks_requests == fetched + 1
    lms.rotate_keys()
    monkeypatch.setattr(outbound, "KEY_SET_REFRESH_S", 0)
    browser = requests.Session()
    assert launch(browser, follow_link(browser, lms, "b-link", "kept-3")).status_code == 303
    assert lms.jwks_requests == fetched + 2
    monkeypatch.setattr(outbound, "KEY_SET_REFRESH_S", 3600)  # bounded: an unknown kid again fetches nothing now
    browser = requests.Session()
    action, fields = follow_link(browser, lms, "b-link", "kept-4")
    claims = {**_payload(fields["id_token"])}
    forged = jwt.encode(claims, _any_key(), algorithm="RS256", headers={"kid": "unknown-kid"})
    assert launch(browser, (action, {**fields, "id_token": forged})).status_code == 400
    assert lms.jwks_requests == fetched + 2


def _link() -> Any:
    from tests.lti.platform import Link

    return Link("x", "x", {}, None)


# -- 2. the login's redirect -------------------------------------------------------------------------------------

def test_login_redirects_only_to_a_valid_authorization_url(strict: Any) -> None:
    """A registration kept from before (its URLs never checked) whose authorization URL is javascript:, http or
    internal: the login refuses, sending the browser nowhere."""
    from academy.lti import new_key_pair

    with strict.app_context():
        db = get_session()
        for n, url in enumerate(("javascript:alert(1)//", "http://lms.example/auth", "https://169.254.169.254/x",
                                 "https://127.0.0.1:8080/admin")):
            private, kid = new_key_pair()
            db.add(LtiPlatform(name=f"old {n}", issuer=f"https://old-{n}.example", client_id="c",
                               auth_login_url=url, auth_token_url="https://lms.example/t",
                               key_set_url="https://lms.example/k", tool_private_key=private, tool_kid=kid))
        db.commit()
    client = strict.test_client()
    for n in range(4):
        answer = client.get(f"/lti/login?iss=https://old-{n}.example&client_id=c&login_hint=u&target_link_uri=x")
        assert answer.status_code == 403 and "Location" not in answer.headers, n
        assert "authorization URL" in answer.get_data(as_text=True)


# -- 3. log lines -------------------------------------------------------------------------------------------------

def test_a_line_break_in_an_issuer_forges_no_log_line(strict: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = strict.test_client()
    with caplog.at_level(logging.INFO):
        client.get("/lti/login", query_string={
            "iss": "https://x.example\n2026-12-07 INFO academy: instructor signed in\r\x1b[2J", "client_id": "c\nd",
            "login_hint": "u", "target_link_uri": "x"})
        client.post("/lti/launch", data={"state": "s\nt", "id_token": "a\nb.c.d"},
                    headers={"Cookie": "lti1p3-session-id=x"})
    messages = [record.getMessage() for record in caplog.records if record.name.startswith("academy")]
    assert any("x.example" in m for m in messages), messages
    assert all(not re.search(r"[\x00-\x1f\x7f]", m) for m in messages), messages


# -- 4. claims -----------------------------------------------------------------------------------------------------

def _payload(token: str) -> dict[str, Any]:
    body = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def _resigned(lms: Lms, token: str, change: Any) -> str:
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "==="))
    claims = change(dict(_payload(token)))
    return jwt.encode(claims, lms.private_key, algorithm="RS256", headers={"kid": header["kid"]})


def test_launch_claims_are_held_to_the_spec(tool: dict[str, Any]) -> None:
    """Launches signed by the registered LMS's own key: without `exp` or `iat`, with a list `aud` of several
    values and no `azp`, or an `azp` that is not this tool: refused; `aud` a list with the right `azp`: signed in."""

    lms: Lms = tool["b"]
    lms.links.setdefault("b-link", _link().__class__("b-link", "B", {}, None))
    cases = {
        "no exp": lambda c: {k: v for k, v in c.items() if k != "exp"},
        "no iat": lambda c: {k: v for k, v in c.items() if k != "iat"},
        "aud list, no azp": lambda c: {**{k: v for k, v in c.items() if k != "azp"}, "aud": [lms.client_id, "other"]},
        "azp another": lambda c: {**c, "aud": [lms.client_id], "azp": "other"},
    }
    for what, change in cases.items():
        browser = requests.Session()
        action, fields = follow_link(browser, lms, "b-link", "claims-1")
        refused = launch(browser, (action, {**fields, "id_token": _resigned(lms, fields["id_token"], change)}))
        assert refused.status_code == 400, (what, refused.status_code, refused.text[-300:])
    browser = requests.Session()
    action, fields = follow_link(browser, lms, "b-link", "claims-1")
    fine = _resigned(lms, fields["id_token"], lambda c: {**c, "aud": ["other", lms.client_id], "azp": lms.client_id})
    assert launch(browser, (action, {**fields, "id_token": fine})).status_code == 303


# -- 5. deep linking ------------------------------------------------------------------------------------------------

def test_deep_linking_is_offered_to_context_roles_only(tool: dict[str, Any]) -> None:
    for user in ("faculty-1", "staff-1"):
        browser = requests.Session()
        refused = launch(browser, follow_link(browser, tool["a"], "deep", user))
        assert refused.status_code == 403 and "Only the course" in refused.text, user
    browser = requests.Session()
    assert launch(browser, follow_link(browser, tool["a"], "deep", "teacher-2")).status_code == 200


def test_six_simultaneous_answers_get_one_signed_response(tool: dict[str, Any]) -> None:
    browser = requests.Session()
    picker = launch(browser, follow_link(browser, tool["a"], "deep", "teacher-3"))
    assert picker.status_code == 200
    action, fields = Forms(picker.text).forms["lti-pick"]
    barrier = threading.Barrier(6)
    answers: list[requests.Response] = []

    def answer() -> None:
        each = requests.Session()
        each.cookies.update(browser.cookies)
        barrier.wait()
        answers.append(each.post(tool["base"] + action, data={**fields, "target": f"exercise:{EXERCISE}"},
                                 timeout=30))

    threads = [threading.Thread(target=answer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    codes = sorted(a.status_code for a in answers)
    # The others are told it was answered: 409 when they raced the one that won, 400 when they came after it.
    assert codes[0] == 200 and all(code in (400, 409) for code in codes[1:]), codes
    assert sum('id="lti-return"' in a.text for a in answers) == 1


# -- 6. framing ------------------------------------------------------------------------------------------------------

def test_only_the_sessions_lms_may_frame_its_pages(tool: dict[str, Any]) -> None:
    """The login and the launch's pages of a browser that came from LMS B may be framed by B only, not by A (another
    registration); a page with no LTI session by none."""

    lms_a, lms_b = tool["a"], tool["b"]
    lms_b.links.setdefault("b-link", _link().__class__("b-link", "B", {}, None))
    browser = requests.Session()
    answer = browser.get(lms_b.start("deep", "teacher-4"), allow_redirects=False, timeout=30)
    login = browser.get(answer.headers["Location"], allow_redirects=False, timeout=30)
    policy = login.headers["Content-Security-Policy"]
    assert lms_b.base in policy and lms_a.base not in policy and lms_a.issuer not in policy
    browser = requests.Session()
    refused = launch(browser, follow_link(browser, lms_b, "deep", "learner-frame"))  # refused, and framed by B only
    policy = refused.headers["Content-Security-Policy"]
    assert refused.status_code == 403 and lms_b.base in policy and lms_a.base not in policy
    stranger = requests.post(f"{tool['base']}/lti/launch", data={"state": "x", "id_token": "a.b.c"}, timeout=30)
    assert "frame-ancestors 'none'" in stranger.headers["Content-Security-Policy"]


# -- 8. administration ------------------------------------------------------------------------------------------------

def test_a_registration_is_edited_removed_on_confirmation_and_registered_again_with_its_learners(
        tool: dict[str, Any]) -> None:

    app, teacher, lms = tool["app"], tool["teacher"], tool["b"]
    lms.links.setdefault("b-link", _link().__class__("b-link", "B", {}, None))
    platform_id = tool["ids"][lms.client_id]
    browser = requests.Session()
    assert launch(browser, follow_link(browser, lms, "b-link", "kept-learner")).status_code == 303
    with app.app_context():
        before = get_session().scalar(select(LtiIdentity.user_id).where(LtiIdentity.sub == "kept-learner"))
        old_kid = get_session().get(LtiPlatform, platform_id).tool_kid

    edit = f"/lti/platforms/{platform_id}/edit"
    page = teacher.client.get(edit)
    assert page.status_code == 200 and lms.issuer in page.get_data(as_text=True)
    fields = {"name": "LMS B renamed", "auth_login_url": f"{lms.base}/auth", "auth_token_url": lms.token_url(),
              "key_set_url": f"{lms.base}/jwks", "auth_audience": ""}
    bad = teacher.post(edit, data={**fields, "key_set_url": "https://169.254.169.254/"})
    assert bad.status_code == 400 and "network" in bad.get_data(as_text=True)
    assert teacher.post(edit, data=fields).status_code == 303
    with app.app_context():
        assert get_session().get(LtiPlatform, platform_id).name == "LMS B renamed"

    remove = f"/lti/platforms/{platform_id}/remove"
    confirm = teacher.client.get(remove).get_data(as_text=True)
    assert 'name="confirm"' in confirm and "keep their accounts" in confirm
    assert teacher.post(remove, data={}).status_code == 400  # a bare POST removes nothing
    listed = teacher.client.get("/lti/platforms").get_data(as_text=True).split('id="platforms"')[1]
    assert f'data-platform="{platform_id}"' in listed
    assert teacher.post(remove, data={"confirm": "remove"}).status_code == 303
    listed = teacher.client.get("/lti/platforms").get_data(as_text=True).split('id="platforms"')[1]
    assert f'data-platform="{platform_id}"' not in listed
    assert teacher.client.get(remove).status_code == 404
    assert old_kid not in requests.get(f"{tool['base']}/lti/jwks", timeout=30).text  # its key is not published
    browser = requests.Session()
    refused = browser.get(lms.start("b-link", "kept-learner"), timeout=30)
    assert refused.status_code == 403  # its login is refused now

    again = teacher.post("/lti/platforms", data={
        "name": "LMS B again", "issuer": lms.issuer, "client_id": lms.client_id, "deployment_ids": lms.deployment_id,
        "auth_login_url": f"{lms.base}/auth", "auth_token_url": lms.token_url(), "key_set_url": f"{lms.base}/jwks"})
    assert again.status_code == 303, again.get_data(as_text=True)[-500:]
    duplicate = teacher.post("/lti/platforms", data={
        "name": "B twice", "issuer": lms.issuer, "client_id": lms.client_id, "deployment_ids": lms.deployment_id,
        "auth_login_url": f"{lms.base}/auth", "auth_token_url": lms.token_url(), "key_set_url": f"{lms.base}/jwks"})
    assert duplicate.status_code == 400
    browser = requests.Session()
    assert launch(browser, follow_link(browser, lms, "b-link", "kept-learner")).status_code == 303
    with app.app_context():
        identities = get_session().scalars(select(LtiIdentity).where(LtiIdentity.sub == "kept-learner")).all()
        assert [i.user_id for i in identities] == [before]  # the same account, not a new empty one


def test_an_issuer_must_be_an_https_url(strict: Any) -> None:
    for issuer in ("lms.example", "https://lms .example", "https://", "ftp://lms.example", "https://lms.example?x=1",
                   "http://lms.example"):
        cli = strict.test_cli_runner().invoke(args=[
            "lti-register", "--name", "X", "--issuer", issuer, "--client-id", "issuer-test",
            "--auth-login-url", "https://lms.example/a", "--auth-token-url", "https://lms.example/t",
            "--key-set-url", "https://lms.example/k"])
        assert cli.exit_code != 0 and "issuer must be" in cli.output, (issuer, cli.output)
    with strict.app_context():
        assert get_session().scalar(select(LtiPlatform).where(LtiPlatform.client_id == "issuer-test")) is None


# -- 7. over-long values on PostgreSQL --------------------------------------------------------------------------------

@pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL is not installed (apt-get install postgresql)")
def test_over_long_values_answer_4xx_on_postgresql(tmp_path: Path) -> None:
    """An over-long `lti1p3-session-id` cookie (at the login, which keeps nonces under it, and at the launch) and an
    over-long `sub` from a registered LMS: never a 500 from a column too short."""
    from academy.lti import PlatformForm, register_platform
    from tests.support.databases import PostgresServer

    postgres = PostgresServer().start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = ready_app({"INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE_URL": postgres.url(),
                     "SANDBOX": "local", "SECRET_KEY": "test", "INSECURE_COOKIES": True, "PUBLIC_URL": base,
                     "REQUEUE_ON_START": False, "LTI_ALLOW_HTTP": True, "WARM_POOL": 0})
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    lms = Lms("https://lms-pg.example", client_id="tool-pg", deployment_id="dep-pg")
    try:
        with serve(lms.app) as origin:
            lms.base = origin
            lms.connect(base)
            lms.links["pg"] = _link().__class__("pg", "PG", {}, None)
            with app.app_context():
                register_platform(PlatformForm("PG", lms.issuer, lms.client_id, f"{origin}/auth", lms.token_url(),
                                               f"{origin}/jwks", (lms.deployment_id,)))
                get_session().commit()
            browser = requests.Session()
            browser.cookies.set("lti1p3-session-id", "a" * 400, domain="127.0.0.1", path="/")
            login = browser.get(f"{base}/lti/login", params={"iss": lms.issuer, "client_id": lms.client_id,
                                                             "login_hint": "u", "target_link_uri": "x"},
                                allow_redirects=False, timeout=30)
            assert login.status_code < 500, login.status_code
            browser = requests.Session()
            action, fields = follow_link(browser, lms, "pg", "fine")
            browser.cookies.set("lti1p3-session-id", "b" * 400, domain="127.0.0.1", path="/")
            assert 400 <= launch(browser, (action, fields)).status_code < 500
            browser = requests.Session()
            long_sub = launch(browser, follow_link(browser, lms, "pg", "u" * 300))
            assert 400 <= long_sub.status_code < 500, long_sub.text[-300:]
            browser = requests.Session()
            assert launch(browser, follow_link(browser, lms, "pg", "fine")).status_code == 303
    finally:
        server.shutdown()
        thread.join()
        jobs.shutdown(app)
        app.extensions["academy.engine"].dispose()
        postgres.stop()
