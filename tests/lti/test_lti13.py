"""LTI 1.3 end to end: this site as the tool, against LMS platforms made with the `lti1p3platform` package (its
own keys, its signed launches, its token endpoint and grade service: tests/lti/platform.py), both served over
HTTP on loopback and driven by a browser that follows redirects and posts the forms it is given. Nothing here
writes a JWT by hand except the forgeries.

- an instructor registers two LMSes (the page, and `flask --app academy lti-register`), a third is never
  registered;
- deep linking: the LMS's instructor picks an exercise, the signed answer goes back and the LMS makes the link
  and its line item;
- a learner launches it, lands on the exercise signed in to their own account, submits for real (a mistake,
  then the solution), and each best score arrives at the LMS's line item;
- refused: a forged launch (payload changed, or signed by another key), a replayed launch, a launch posted
  from a browser that did not log in, a login and a launch from an unregistered LMS, a deep-linking request
  from a learner; and one LMS user never reaches another's account (the same `sub` on two LMSes is two
  accounts).
"""
from __future__ import annotations

import base64
import json
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import requests
from sqlalchemy import select
from werkzeug.serving import make_server

from academy import jobs
from academy.data.db import get_session
from academy.data.models import LtiGradeLink, LtiIdentity, LtiPlatform, LtiValue, Submission, User
from tests.lti.platform import Lms, serve
from tests.support.apps import new_session, ready_app
from tests.support.lti import Forms, csrf_of, follow_link, launch
from tests.support.paths import EXERCISE, EXERCISES, SOLUTION
from tests.support.processes import free_port

MISTAKE = (EXERCISES / EXERCISE / "mistakes" / "raw_backward.py").read_text()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The tool (this site on loopback, local sandbox with its warm pool of two) and three LMSes: A registered on
    the page, B by the command line, C never."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    folder: Path = tmp_path_factory.mktemp("lti")
    app = ready_app({"INSTANCE_PATH": str(folder / "instance"), "SANDBOX": "local", "WARM_POOL": 2,
                     "SECRET_KEY": "test", "INSECURE_COOKIES": True, "PUBLIC_URL": base,
                     "REQUEUE_ON_START": False, "LTI_ALLOW_HTTP": True})  # the LMSes are on loopback
    lms_a = Lms("https://lms-a.example", client_id="tool-a", deployment_id="dep-a")
    lms_b = Lms("https://lms-b.example", client_id="tool-b", deployment_id="dep-b")
    lms_c = Lms("https://lms-c.example", client_id="tool-a", deployment_id="dep-a")  # A's client id, not registered
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with serve(lms_a.app) as a, serve(lms_b.app) as b, serve(lms_c.app) as c:
        for lms, origin in ((lms_a, a), (lms_b, b), (lms_c, c)):
            lms.base = origin
            lms.connect(base)
        from academy.data.accounts import create_account

        with app.app_context():
            create_account("teacher@example.org", "password123", role="instructor", name="Teacher")
            get_session().commit()
        teacher = new_session(app)
        teacher.signin("teacher@example.org")
        registered = teacher.post("/lti/platforms", data={
            "name": "LMS A", "issuer": lms_a.issuer, "client_id": lms_a.client_id, "deployment_ids": "dep-a",
            "auth_login_url": f"{a}/auth", "auth_token_url": lms_a.token_url(), "key_set_url": f"{a}/jwks"})
        assert registered.status_code == 303, registered.get_data(as_text=True)[-800:]
        cli = app.test_cli_runner().invoke(args=[
            "lti-register", "--name", "LMS B", "--issuer", lms_b.issuer, "--client-id", lms_b.client_id,
            "--deployment-id", "dep-b", "--auth-login-url", f"{b}/auth", "--auth-token-url", lms_b.token_url(),
            "--key-set-url", f"{b}/jwks"])
        assert cli.exit_code == 0, cli.output
        assert f"{base}/lti/jwks" in cli.output and f"{base}/lti/login" in cli.output
        try:
            yield {"app": app, "base": base, "a": lms_a, "b": lms_b, "c": lms_c, "teacher": teacher}
        finally:
            server.shutdown()
            thread.join()
            jobs.shutdown(app)


def _deep_link(stack: dict[str, Any], target: str) -> str:
    """The LMS's instructor picks `target` through deep linking; the id of the link the LMS made."""
    lms: Lms = stack["a"]
    browser = requests.Session()
    picker = launch(browser, follow_link(browser, lms, "deep", "teacher-1"))
    assert picker.status_code == 200, picker.text[-800:]
    assert "Choose what the LMS links to" in picker.text and f'value="{target}"' in picker.text
    # The LMS may show the picker in a frame: it, and no other page, may be framed by the LMS this browser's LTI
    # session came from (A), not by another registered one (B), nor an unregistered one (C).
    framers = {lms.base, lms.issuer}
    assert picker.headers["Content-Security-Policy"].endswith("frame-ancestors " + " ".join(sorted(framers)))
    assert stack["b"].base not in picker.headers["Content-Security-Policy"]
    assert stack["c"].base not in picker.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in picker.headers
    home = browser.get(stack["base"] + "/", timeout=30)
    assert home.headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in home.headers[
        "Content-Security-Policy"]
    action, fields = Forms(picker.text).forms["lti-pick"]
    # In a frame the Lax session cookie (and its CSRF token) is not sent: the answer needs neither.
    browser.cookies.clear(domain="127.0.0.1", path="/", name="session")
    fields = {key: value for key, value in fields.items() if key != "csrf_token"}
    elsewhere = requests.Session()  # another browser, with a page (and CSRF token) of its own
    token = csrf_of(elsewhere.get(stack["base"] + "/", timeout=30).text)
    taken = elsewhere.post(stack["base"] + action, data={**fields, "csrf_token": token, "target": target},
                           timeout=30)
    assert taken.status_code == 400 and "no deep-linking launch of this browser" in taken.text
    answer = browser.post(stack["base"] + action, data={**fields, "target": target}, timeout=30)
    assert answer.status_code == 200, answer.text[-800:]
    return_action, return_fields = Forms(answer.text).forms["lti-return"]
    assert return_action == f"{lms.base}/deep-link-return"
    made = browser.post(return_action, data=return_fields, timeout=30)  # what lti.js does on its own
    assert made.status_code == 200, (made.text, lms.refusals)
    again = browser.post(stack["base"] + action, data={**fields, "target": target}, timeout=30)
    assert again.status_code == 400 and "answered already" in again.text  # one answer per launch
    return made.json()["links"][0]


@pytest.mark.slow
def test_deep_link_launch_submit_and_the_best_score_arrives_at_the_lms(stack: dict[str, Any]) -> None:
    lms: Lms = stack["a"]
    link_id = _deep_link(stack, f"exercise:{EXERCISE}")
    link = lms.links[link_id]
    assert link.custom == {"dla_target": f"exercise:{EXERCISE}"} and link.title == "Write one AMP training step"
    lineitem = lms.lineitems[link.lineitem]
    assert lineitem["scoreMaximum"] == 100 and lineitem["resourceId"] == EXERCISE

    learner = requests.Session()
    landed = launch(learner, follow_link(learner, lms, link_id, "learner-1"))
    assert landed.status_code == 303 and landed.headers["Location"] == f"/lessons/{EXERCISE}"
    # The launch itself marks the step it leads to as opened: the step page that follows the LMS's cross-site POST
    # records no visit of its own (a browser sends `Sec-Fetch-Site: cross-site` there).
    lesson_id, step_id = EXERCISE.split("/")
    lessons = learner.get(f"{stack['base']}/api/progress", timeout=30).json()["lessons"]
    assert [lesson["resume_step_id"] for lesson in lessons if lesson["lesson"] == lesson_id] == [step_id], lessons
    page = learner.get(stack["base"] + landed.headers["Location"], timeout=30)
    assert page.status_code == 200 and "Learner-1 Example" in page.text  # signed in, by the LMS's name
    headers = {"X-CSRF-Token": csrf_of(page.text)}
    for code, expected in ((MISTAKE, None), (SOLUTION, 100.0)):
        # Counted before submitting: the job sends the score right after it stores the verdict, so a count taken
        # once the verdict shows may already hold it, and the wait below then ran out its 30 s (36 s for this test
        # in both profiled runs of the whole suite, 8 s alone).
        sent = len(lms.scores.get(link.lineitem, []))
        made = learner.post(f"{stack['base']}/api/submissions", json={"exercise": EXERCISE, "code": code},
                            headers=headers, timeout=30)
        assert made.status_code == 202, made.text
        deadline = time.monotonic() + 120
        while (status := learner.get(f"{stack['base']}/api/submissions/{made.json()['id']}", timeout=30)
               .json())["status"] not in ("done", "error"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert status["status"] == "done", status
        score = round(100 * status["result"]["score"], 1)
        deadline = time.monotonic() + 30
        while len(lms.scores.get(link.lineitem, [])) == sent and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(lms.scores.get(link.lineitem, [])) == sent + 1, lms.scores
        arrived = lms.scores[link.lineitem][-1]
        assert arrived["scoreGiven"] == (expected if expected is not None else score) and \
            arrived["scoreMaximum"] == 100, arrived
        assert arrived["userId"] == "learner-1" and arrived["gradingProgress"] == "FullyGraded"
    assert [s["scoreGiven"] for s in lms.scores[link.lineitem]][-1] == 100 and lms.token_requests >= 1
    assert not lms.refusals
    app = stack["app"]
    with app.app_context():
        from academy import lti

        identity = get_session().scalar(select(LtiIdentity).where(LtiIdentity.sub == "learner-1"))
        assert identity.user.name == "Learner-1 Example" and identity.user.sis_id == "SIS-learner-1"
        assert identity.user.role == "learner" and identity.user.email is None  # the LMS's email matches nothing
        # The job records what the LMS accepted once the LMS's answer is back: the LMS may hold the score a moment
        # before this database does (read too early, the second-best score showed here in one full run).
        deadline = time.monotonic() + 30
        while True:
            get_session().expire_all()
            grade_link = get_session().scalar(select(LtiGradeLink).where(LtiGradeLink.identity_id == identity.id))
            if grade_link.sent_score == 100 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert grade_link.sent_score == 100 and grade_link.error is None
        before = len(lms.scores[link.lineitem])
        assert lti.send_best_score(identity.user_id, EXERCISE) == 0  # the LMS has the best already: not resent
        assert len(lms.scores[link.lineitem]) == before
        # The LMS refuses (down, or the tool's access revoked): the grade stays here, the reason is kept and
        # shown, and the next try sends it.
        grade_link.sent_score = None
        get_session().commit()
        lms.refuse_tokens = True
        assert lti.send_best_score(identity.user_id, EXERCISE) == 0
        failing = stack["teacher"].client.get("/lti/platforms").get_data(as_text=True).split('id="failing-scores"')[1]
        assert EXERCISE in failing and "the LMS could not be reached, or did not take the score" in failing
        assert "Learner-1 Example" in failing and "Exception" not in failing and "/token" not in failing
        lms.refuse_tokens = False
        assert lti.send_best_score(identity.user_id, EXERCISE) == 1
        assert get_session().get(LtiGradeLink, grade_link.id, populate_existing=True).error is None
        assert 'id="failing-scores"' not in stack["teacher"].client.get("/lti/platforms").get_data(as_text=True)
    learner_page = stack["teacher"].client.get(f"/instructor/learners/{identity.user_id}").get_data(as_text=True)
    assert "Comes from the LMS LMS A (its user learner-1)." in learner_page
    assert "The LMS says its email is learner-1@lms.example." in learner_page


def test_a_lesson_link_opens_the_lesson(stack: dict[str, Any]) -> None:
    link_id = _deep_link(stack, "lesson:gradient-accumulation")
    learner = requests.Session()
    landed = launch(learner, follow_link(learner, stack["a"], link_id, "learner-lesson"))
    assert landed.status_code == 303 and landed.headers["Location"] == "/lessons/gradient-accumulation"


def test_a_learner_cannot_deep_link(stack: dict[str, Any]) -> None:
    browser = requests.Session()
    refused = launch(browser, follow_link(browser, stack["a"], "deep", "learner-9"))
    assert refused.status_code == 403 and "Only the course&#39;s instructors" in refused.text


def _parts(token: str) -> list[str]:
    return token.split(".")


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _payload(token: str) -> dict[str, Any]:
    body = _parts(token)[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def _signed_in(browser: requests.Session, base: str) -> bool:
    return browser.get(f"{base}/api/progress", timeout=30).status_code == 200


def test_a_forged_launch_is_refused(stack: dict[str, Any]) -> None:
    """The platform's signed launch for learner-2, its payload changed to name another user (teacher-1, whose
    account exists): refused, and so is the same payload signed by a key that is not the platform's."""
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    lms: Lms = stack["a"]
    victim = requests.Session()
    assert launch(victim, follow_link(victim, lms, "deep", "teacher-1")).status_code == 200  # an account exists
    browser = requests.Session()
    action, fields = follow_link(browser, lms, "deep", "learner-2")
    header, body, signature = _parts(fields["id_token"])
    claims = {**_payload(fields["id_token"]), "sub": "teacher-1"}
    forged = launch(browser, (action, {**fields, "id_token": f"{header}.{_b64(claims)}.{signature}"}))
    assert forged.status_code == 400 and "signature does not match" in forged.text
    assert not _signed_in(browser, stack["base"])

    action, fields = follow_link(browser, lms, "deep", "learner-2")
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    kid = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    claims = {**_payload(fields["id_token"]), "sub": "teacher-1"}
    resigned = jwt.encode(claims, other_key, algorithm="RS256", headers={"kid": kid})
    refused = launch(browser, (action, {**fields, "id_token": resigned}))
    assert refused.status_code == 400 and "signature does not match" in refused.text
    assert not _signed_in(browser, stack["base"])


def test_a_replayed_launch_is_refused(stack: dict[str, Any]) -> None:
    """A launch works once: posted again (the same id_token and state, same browser) it is refused, and a
    launch form taken to another browser (no LTI session of that login) is refused too."""
    lms: Lms = stack["a"]
    link_id = next(iter(lms.links), None) or _deep_link(stack, f"exercise:{EXERCISE}")
    browser = requests.Session()
    form = follow_link(browser, lms, link_id, "learner-3")
    assert launch(browser, form).status_code == 303
    browser.cookies.clear(domain="127.0.0.1", path="/", name="session")  # signed out here, the LTI cookies kept
    replayed = launch(browser, form)
    assert replayed.status_code == 400 and "already used" in replayed.text
    assert not _signed_in(browser, stack["base"])

    stolen = follow_link(requests.Session(), lms, link_id, "learner-4")  # logged in in one browser...
    elsewhere = requests.Session()
    taken = launch(elsewhere, stolen)  # ...posted from another
    assert taken.status_code == 400 and not _signed_in(elsewhere, stack["base"])
    with stack["app"].app_context():
        assert get_session().scalar(select(LtiIdentity).where(LtiIdentity.sub == "learner-4")) is None


def test_an_unregistered_lms_is_refused_at_login_and_at_launch(stack: dict[str, Any]) -> None:
    lms_a, lms_c = stack["a"], stack["c"]
    browser = requests.Session()
    login = browser.get(lms_c.start("link-1", "learner-5"), timeout=30)
    assert login.status_code == 403 and "No LMS with the issuer https://lms-c.example" in login.text
    # A state and nonce from A's login, answered by C's authorization endpoint (signed by C, issuer C).
    redirect_to_a = browser.get(lms_a.start("deep", "teacher-7"), allow_redirects=False, timeout=30)
    tool_login = browser.get(redirect_to_a.headers["Location"], allow_redirects=False, timeout=30)
    authorize = tool_login.headers["Location"].replace(lms_a.base, lms_c.base)
    page = browser.get(authorize, timeout=30)
    assert page.status_code == 200, page.text
    refused = launch(browser, Forms(page.text).forms["launch"])
    assert refused.status_code == 403 and "No LMS with this issuer and client id" in refused.text
    assert not _signed_in(browser, stack["base"])


def test_one_lms_user_never_reaches_another_lms_users_account(stack: dict[str, Any]) -> None:
    """The same `sub` on two registered LMSes is two people: two accounts, and a launch of one leads to that
    one's account only; the key is never an email the LMS sends."""
    lms_a, lms_b = stack["a"], stack["b"]
    link_a = next(iter(lms_a.links), None) or _deep_link(stack, f"exercise:{EXERCISE}")
    lms_b.links["b-link"] = type(lms_a.links[link_a])("b-link", "B's link", {"dla_target": "lesson:profiling"}, None)
    browser = requests.Session()
    with stack["app"].app_context():
        nonces = len(get_session().scalars(select(LtiValue).where(LtiValue.key.like("%nonce%"))).all())
    assert launch(browser, follow_link(browser, lms_a, link_a, "same-sub")).status_code == 303
    first = browser.get(f"{stack['base']}/api/progress", timeout=30).json()
    assert launch(browser, follow_link(browser, lms_b, "b-link", "same-sub")).status_code == 303
    second = browser.get(f"{stack['base']}/api/progress", timeout=30).json()
    with stack["app"].app_context():
        db = get_session()
        identities = db.scalars(select(LtiIdentity).where(LtiIdentity.sub == "same-sub")).all()
        assert len(identities) == 2 and len({i.user_id for i in identities}) == 2
        assert {i.platform.issuer for i in identities} == {lms_a.issuer, lms_b.issuer}
        # Both LMSes said the same email: it is kept beside each identity, and names no account.
        assert {i.email for i in identities} == {"same-sub@lms.example"}
        assert db.scalar(select(User).where(User.email == "same-sub@lms.example")) is None
        # Each login left a nonce, each launch used its own up: the two launches here left none behind.
        assert len(db.scalars(select(LtiValue).where(LtiValue.key.like("%nonce%"))).all()) == nonces
    assert first["user"] == second["user"] == "Same-Sub Example"  # the same name, two accounts
    assert launch(browser, follow_link(browser, lms_a, link_a, "same-sub")).status_code == 303  # back to A's


def test_registration_refuses_what_is_wrong_and_publishes_each_key(stack: dict[str, Any]) -> None:
    teacher = stack["teacher"]
    lms_a: Lms = stack["a"]
    page = teacher.client.get("/lti/platforms").get_data(as_text=True)
    for url in ("/lti/login", "/lti/launch", "/lti/jwks"):
        assert f"{stack['base']}{url}" in page
    duplicate = teacher.post("/lti/platforms", data={
        "name": "A again", "issuer": lms_a.issuer, "client_id": lms_a.client_id, "auth_login_url": "https://x/a",
        "auth_token_url": "https://x/t", "key_set_url": "https://x/k"})
    assert duplicate.status_code == 400 and "already has a registration" in duplicate.get_data(as_text=True)
    bad = teacher.post("/lti/platforms", data={
        "name": "D", "issuer": "https://lms-d.example", "client_id": "x", "auth_login_url": "javascript:alert(1)",
        "auth_token_url": "https://x/t", "key_set_url": "https://x/k"})
    assert bad.status_code == 400 and "must be an https:// URL" in bad.get_data(as_text=True)
    assert 'value="https://lms-d.example"' in bad.get_data(as_text=True)  # what was typed is kept
    keys = requests.get(f"{stack['base']}/lti/jwks", timeout=30).json()["keys"]
    with stack["app"].app_context():
        kids = [p.tool_kid for p in get_session().scalars(select(LtiPlatform).order_by(LtiPlatform.id))]
    assert [k["kid"] for k in keys] == kids and len(set(kids)) == 2
    assert all(set(k) >= {"kty", "n", "e", "alg", "use"} and "d" not in k for k in keys)  # public halves only
    learner = new_session(stack["app"])
    learner.guest()
    assert learner.client.get("/lti/platforms").status_code == 403


def test_no_submission_of_another_lms_user_is_reachable(stack: dict[str, Any]) -> None:
    """What a launched learner submitted is theirs: another LMS user launched into the same exercise sees none
    of it (the API answers 404 for a submission that is not theirs)."""
    with stack["app"].app_context():
        owned = get_session().scalar(select(Submission).join(User).join(
            LtiIdentity, LtiIdentity.user_id == User.id).where(LtiIdentity.sub == "learner-1"))
    if owned is None:
        pytest.skip("the grading test did not run (it makes learner-1's submissions)")
    lms: Lms = stack["a"]
    browser = requests.Session()
    link_id = next(iter(lms.links))
    assert launch(browser, follow_link(browser, lms, link_id, "learner-6")).status_code == 303
    assert browser.get(f"{stack['base']}/api/submissions/{owned.id}", timeout=30).status_code == 404


def test_logins_from_one_address_are_limited(tmp_path: Path) -> None:
    """Each login stores a nonce: one client address gets DLA_LIMIT_LTI_LOGINS_PER_ADDRESS of them, then 429."""
    app = ready_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "local", "SECRET_KEY": "test",
                     "LIMIT_LTI_LOGINS_PER_ADDRESS": "2 per hour", "REQUEUE_ON_START": False})
    try:
        client = app.test_client()
        url = "/lti/login?iss=https://lms.example&login_hint=u&client_id=c"
        assert [client.get(url).status_code for _ in range(3)] == [403, 403, 429]
        assert client.get(url, environ_base={"REMOTE_ADDR": "127.0.0.9"}).status_code == 403  # another address
    finally:
        jobs.shutdown(app)
