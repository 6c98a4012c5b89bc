"""Questions to the tutor through the real engine and the real embedded model (tests/conftest.py: tutor_model):
a streamed answer with its sources, the limits, the off switch, a dead or hanging model server, a guest's
conversation carried into an account."""
from __future__ import annotations

import time
from pathlib import Path

import psutil

from academy.data.models import TutorMessage
from tests.support.apps import WebSession
from tests.support.processes import free_port
from tests.support.tutor import ASK, LESSON, RAW_BACKWARD, STEP, answer_text, copy_graded, events, silent_server

CARD = "what-mixed-precision-means"
ASK_CARD = f"/api/tutor/{LESSON}/{CARD}"


def _graded_learner(graded: Path, tmp_path: Path, make_tutor_app, **config) -> WebSession:  # noqa: ANN001
    folder, cookie = copy_graded(graded, tmp_path / "graded-instance")
    app = make_tutor_app(INSTANCE_PATH=str(folder), **config)
    web = WebSession(app.test_client())
    web.client.set_cookie("session", cookie)
    return web


def _upstream_connections(port: int) -> int:
    return sum(1 for c in psutil.Process().net_connections("tcp")
               if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED)


def test_a_question_about_a_failed_check_streams_an_answer_that_cites_card_check_and_line(
        graded: Path, tmp_path: Path, make_tutor_app, tutor_model) -> None:  # noqa: ANN001
    web = _graded_learner(graded, tmp_path, make_tutor_app, TUTOR_URL=tutor_model.url)
    answer = web.api("POST", ASK, json={"question": "Why does the check scaled-backward fail?", "code": RAW_BACKWARD},
                     buffered=False)
    assert answer.status_code == 200 and answer.mimetype == "text/event-stream"
    chunks = [chunk.decode() for chunk in answer.response if chunk.strip()]
    found = events("".join(chunks))
    tokens = [data["text"] for name, data in found if name == "token"]
    assert len(tokens) >= 2 and len(chunks) >= 3, found  # streamed piece by piece, not in one block
    done = found[-1]
    assert done[0] == "done" and done[1]["outcome"] in ("done", "length"), found
    sources = {(s["kind"], s["title"]): s["url"] for s in done[1]["sources"]}
    assert sources[("check", "Backward runs on the scaled loss")] == f"/lessons/{LESSON}/{STEP}#result"
    assert sources[("line", "your line 11")] == f"/lessons/{LESSON}/{STEP}#editor"
    assert any(kind == "card" and url.startswith(f"/lessons/{LESSON}/") for (kind, _), url in sources.items())
    stored = web.client.get(f"/api/tutor/{LESSON}/{STEP}").json["messages"]
    assert [m["role"] for m in stored] == ["learner", "tutor"]
    assert stored[0]["text"] == "Why does the check scaled-backward fail?"
    assert stored[1]["text"] == answer_text(found) and stored[1]["sources"] == done[1]["sources"]


def test_the_answer_stops_at_the_maximum_length(make_tutor_app, tutor_model) -> None:  # noqa: ANN001
    web = WebSession(make_tutor_app(TUTOR_URL=tutor_model.url, TUTOR_MAX_TOKENS=3).test_client())
    found = events(web.api("POST", ASK_CARD, json={"question": "Explain float16 in detail, please."}))
    assert found[-1][0] == "done" and found[-1][1]["outcome"] == "length", found
    assert 0 < len(answer_text(found)) < 40


def test_the_question_budget_per_minute_and_per_day(make_tutor_app, tutor_model) -> None:  # noqa: ANN001
    for per_minute, per_day, words in ((1, 50, "in the last minute"), (50, 1, "today's questions")):
        web = WebSession(make_tutor_app(TUTOR_URL=tutor_model.url, TUTOR_MAX_TOKENS=2,
                                        TUTOR_QUESTIONS_PER_MINUTE=per_minute,
                                        TUTOR_QUESTIONS_PER_DAY=per_day).test_client()).guest()
        assert web.api("POST", ASK_CARD, json={"question": "What is bf16?"}).status_code == 200
        refused = web.api("POST", ASK_CARD, json={"question": "And fp16?"})
        assert refused.status_code == 429 and words in refused.json["error"], refused.json
        assert 0 < int(refused.headers["Retry-After"]) <= (60 if per_minute == 1 else 86400)


def test_a_full_line_says_busy_and_stop_ends_the_upstream_request(make_tutor_app, tutor_model) -> None:  # noqa: ANN001
    app = make_tutor_app(TUTOR_URL=tutor_model.url, TUTOR_MAX_TOKENS=200, TUTOR_CONCURRENT=1, TUTOR_QUEUE=0)
    first, second = WebSession(app.test_client()).guest(), WebSession(app.test_client()).guest()
    port = int(tutor_model.url.split(":")[2].split("/")[0])
    streaming = first.api("POST", ASK_CARD, json={"question": "Tell me everything about loss scaling."},
                          buffered=False)
    assert streaming.status_code == 200
    next(iter(streaming.response))  # the answer is coming
    assert _upstream_connections(port) == 1
    busy = second.api("POST", ASK_CARD, json={"question": "What is fp16?"})
    assert busy.status_code == 503 and "busy" in busy.json["error"] and int(busy.headers["Retry-After"]) > 0
    streaming.close()  # the learner's Stop: the browser drops the stream
    assert _upstream_connections(port) == 0  # ...and the request to the model server is closed with it
    with app.app_context():
        from academy.data.db import get_session

        assert get_session().query(TutorMessage).filter_by(role="tutor").one().outcome == "stopped"
    unread = second.api("POST", ASK_CARD, json={"question": "What is fp16?"}, buffered=False)
    assert unread.status_code == 200
    unread.close()  # a client gone before the body's first byte: the stream never starts...
    assert _upstream_connections(port) == 0  # ...and still the upstream request ends and the slot is free
    again = first.api("POST", ASK_CARD, json={"question": "What is bf16?"}, buffered=False)
    assert again.status_code == 200  # the slot is free again (the answer itself is not needed: no 200 tokens)
    again.close()
    assert _upstream_connections(port) == 0


def test_the_operator_switch_turns_the_tutor_off(make_tutor_app) -> None:  # noqa: ANN001
    web = WebSession(make_tutor_app(TUTOR_ENABLED=False).test_client()).guest()
    page = web.client.get(f"/lessons/{LESSON}/{STEP}").get_data(as_text=True)
    assert 'id="tutor"' not in page and "tutor.js" not in page
    off = web.api("POST", ASK, json={"question": "Why?"})
    assert off.status_code == 503 and off.json["enabled"] is False and "turned off" in off.json["error"]
    assert web.client.get(ASK).status_code == 503


def test_a_dead_or_hanging_model_server_breaks_no_page_and_answers_503(make_tutor_app) -> None:  # noqa: ANN001
    dead = WebSession(make_tutor_app(TUTOR_URL=f"http://127.0.0.1:{free_port()}/v1").test_client()).guest()
    assert 'id="tutor"' in dead.client.get(f"/lessons/{LESSON}/{STEP}").get_data(as_text=True)
    refused = dead.api("POST", ASK, json={"question": "Why?"})
    assert refused.status_code == 503 and "cannot be reached" in refused.json["error"]
    assert refused.headers["Retry-After"] == "60"
    with silent_server() as port:
        app = make_tutor_app(TUTOR_URL=f"http://127.0.0.1:{port}/v1", TUTOR_FIRST_TOKEN_TIMEOUT_S=1)
        web = WebSession(app.test_client()).guest()
        started = time.monotonic()
        assert web.client.get(f"/lessons/{LESSON}/{STEP}").status_code == 200
        hung = web.api("POST", ASK, json={"question": "Why?"})
        assert hung.status_code == 503 and time.monotonic() - started < 10
        again = web.api("POST", ASK, json={"question": "Why?"})  # the slot was given back
        assert again.status_code == 503 and "cannot be reached" in again.json["error"]
        with app.app_context():
            from academy.data.db import get_session

            assert get_session().query(TutorMessage).count() == 0  # nothing answered: no budget spent


def test_a_guest_s_conversation_carries_over_at_sign_up_and_at_merge(make_tutor_app, tutor_model) -> None:  # noqa: ANN001
    app = make_tutor_app(TUTOR_URL=tutor_model.url, TUTOR_MAX_TOKENS=2)
    signing_up = WebSession(app.test_client()).guest()
    assert signing_up.api("POST", ASK_CARD, json={"question": "Kept at sign-up?"}).status_code == 200
    signing_up.signup("new@example.org")
    assert [m["text"] for m in signing_up.client.get(ASK_CARD).json["messages"]][0] == "Kept at sign-up?"
    WebSession(app.test_client()).signup("owner@example.org")
    merging = WebSession(app.test_client()).guest()
    assert merging.api("POST", ASK_CARD, json={"question": "Kept at merge?"}).status_code == 200
    merging.signin("owner@example.org")
    merging.post("/auth/merge", data={"action": "merge"})
    again = WebSession(app.test_client())
    again.signin("owner@example.org")
    assert [m["text"] for m in again.client.get(ASK_CARD).json["messages"]][0] == "Kept at merge?"
