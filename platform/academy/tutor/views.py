"""The tutor's routes: ask a question about a step (the answer streams as server-sent events), read the step's
conversation, and the instructor's per-exercise summary of what learners ask.

Pages never contact the model server: the panel is drawn from the settings alone, so a slow or absent model
server never slows or breaks a page, and grading never waits on it (it runs in its own process).
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterator

from flask import Blueprint, Response, abort, g, jsonify, render_template, request, stream_with_context
from flask.typing import ResponseReturnValue
from flask_babel import gettext

from academy.content import get_content
from academy.i18n import current_language
from academy.settings import settings
from academy.tutor import store
from academy.tutor.admission import Line, Refusal, over_budget
from academy.tutor.client import Chunk, Endpoint, TutorUnavailable, stream_chat
from academy.tutor.context import build_context
from academy.tutor.guard import Guard
from academy.tutor.language import written_in
from academy.tutor.prompt import messages
from academy.web.inputs import code_field
from academy.web.lessons import step_page
from academy.web.security import instructor_required, learner_required, login_required
from grader.core.course import ExerciseStep, Lesson, Step

bp = Blueprint("tutor", __name__)
MAX_QUESTION_CHARS = 1000
_lines: dict[int, Line] = {}  # one line of answer slots per app (tests make several apps in one process)
_lines_lock = threading.Lock()


def line() -> Line:
    from flask import current_app

    with _lines_lock:
        return _lines.setdefault(id(current_app._get_current_object()), Line())


def endpoint() -> Endpoint:
    own = settings()
    return Endpoint(own.tutor_url, own.tutor_model, own.tutor_api_key, own.tutor_connect_timeout_s,
                    own.tutor_first_token_timeout_s, own.tutor_answer_timeout_s)


def answers_in(language: str) -> str:
    """The language the model is asked to answer in: the page's, except with the embedded model (no DLA_TUTOR_MODEL
    named: SmolLM2-135M), which asked for Italian, Japanese or Arabic writes degenerate repetition ("الأنا الأنا
    ...") or English anyway (benchmarks/tutor_language.py, docs/tutor.md): it is asked for English, and the panel
    says so in the page's language. A named model (vLLM, Ollama, a hosted one) is asked for the page's language."""
    return language if settings().tutor_model else "en"


def _answers_in_english() -> bool:
    """For the panel: whether this page's tutor answers in English though the page is not in English."""
    language = current_language()
    return language != "en" and answers_in(language) == "en"


@bp.app_context_processor
def _tutor_language() -> dict[str, Any]:
    return {"tutor_answers_in_english": _answers_in_english}  # called only where the panel is drawn


def _json_error(status: int, message: str, retry_header: int | None = None, **extra: Any) -> Response:
    response = jsonify(error=message, **extra)
    response.status_code = status
    if retry_header is not None:
        response.headers["Retry-After"] = str(retry_header)
    return response


def _off() -> Response:
    return _json_error(503, gettext("The tutor is turned off on this site."), enabled=False)


def _step(lesson_id: str, step_id: str) -> tuple[Lesson, Step]:
    try:
        lesson = get_content().lesson(lesson_id)
        step = lesson.step(step_id)
    except KeyError:
        abort(404, description=gettext("There is no such step."))
    if not step_page(step).tutor:  # the step kinds whose pages offer the tutor (a quiz does not)
        abort(404, description=gettext("The tutor answers on cards and exercises, not in the quiz."))
    return lesson, step


def _refused(refusal: Refusal) -> Response:
    if refusal.why == "busy":
        message = gettext("The tutor is busy, try again in %(seconds)s s.", seconds=refusal.retry_after_s)
    elif refusal.why == "minute":
        message = gettext("You have asked the tutor a lot in the last minute; try again in %(seconds)s s.",
                          seconds=refusal.retry_after_s)
    else:
        message = gettext("You have used today's questions to the tutor; try again in %(seconds)s s.",
                          seconds=refusal.retry_after_s)
    return _json_error(refusal.status, message, refusal.retry_after_s, retry_after=refusal.retry_after_s)


@bp.get("/api/tutor/<lesson_id>/<step_id>")
@login_required
def get_conversation(lesson_id: str, step_id: str) -> ResponseReturnValue:
    if not settings().tutor_enabled:
        return _off()
    _step(lesson_id, step_id)
    rows = store.conversation(g.user.id, lesson_id, step_id)
    return jsonify(enabled=True, messages=[store.message_json(row) for row in rows])


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


@bp.post("/api/tutor/<lesson_id>/<step_id>")
@learner_required
def ask(lesson_id: str, step_id: str) -> ResponseReturnValue:
    """One question; the answer streams back as `text/event-stream`: `token` events ({"text"}), then `done`
    ({"outcome", "removed", "sources"}), or `error` ({"message"}) if the model server fails mid-answer."""
    own = settings()
    if not own.tutor_enabled:
        return _off()
    lesson, step = _step(lesson_id, step_id)
    data = request.get_json()
    if not isinstance(data, dict) or not isinstance(data.get("question"), str) or not data["question"].strip():
        abort(400, description=gettext('Send {"question": "..."}: your question to the tutor.'))
    question = data["question"].strip()
    if len(question) > MAX_QUESTION_CHARS:
        abort(413, description=gettext("Ask in at most %(count)s characters.", count=MAX_QUESTION_CHARS))
    code = data.get("code")
    if code is not None:
        code = code_field(data)
    refusal = over_budget(g.user.id, own.tutor_questions_per_minute, own.tutor_questions_per_day)
    if refusal is not None:
        return _refused(refusal)
    slots = line()
    refusal = slots.enter(own.tutor_concurrent, own.tutor_queue, own.tutor_answer_timeout_s)
    if refusal is not None:
        return _refused(refusal)
    started = time.monotonic()
    try:
        return _answer(lesson, step, question, code, slots, started)
    except BaseException:
        slots.leave(time.monotonic() - started)
        raise


def _answer(lesson: Lesson, step: Step, question: str, code: str | None, slots: Line,
            started: float) -> ResponseReturnValue:
    exercise_id = step.exercise.id if isinstance(step, ExerciseStep) else None
    history = store.history_pairs(store.conversation(g.user.id, lesson.id, step.id))
    context = build_context(g.user, lesson, step, code, question)
    guard = Guard(context.forbidden_code, context.forbidden_hints, context.entry,
                  removed_solution=gettext("[Code removed: it repeated the worked solution. Try writing it "
                                           "yourself first.]"),
                  removed_hint=gettext("[Removed: it quoted a hint you have not opened yet.]"))
    language = current_language()
    upstream = stream_chat(endpoint(), messages(context, question, answers_in(language), history),
                           settings().tutor_max_tokens)
    try:  # the first piece before answering 200: an unreachable or silent server is a plain 503
        first = next(upstream, Chunk(finish_reason="stop"))
    except TutorUnavailable as exc:  # not counted against the learner's budget: nothing was answered
        upstream.close()
        slots.leave(time.monotonic() - started)
        return _json_error(503, gettext("The tutor cannot be reached right now; try again in a minute."), 60,
                           detail=str(exc) if g.user.is_instructor else None)
    store.add(g.user.id, lesson.id, step.id, exercise_id, "learner", question)
    sources = [s.as_json() for s in context.sources]
    user_id = g.user.id
    notes = []
    if isinstance(step, ExerciseStep) and "LATEST VERDICT: no submission yet" in context.evidence \
            and "LATEST RUN: none yet" in context.evidence:
        notes.append(gettext("You have not run or submitted this code yet: the tutor only had your code and the "
                             "lesson to go on."))
    # Told in the page's language when the model answered in another one (a small model often answers in English):
    # the panel says so rather than pretending.
    language_note = gettext("The tutor answered in English: the model it runs on does not yet write this page's "
                            "language reliably.") if language != "en" else ""

    def release() -> None:
        """End the upstream request and free the slot (the WSGI server closes the stream when the client goes,
        also before its first byte: tests/tutor/test_ask.py)."""
        upstream.close()
        slots.leave(time.monotonic() - started)

    def events() -> Iterator[str]:
        shown: list[str] = []
        outcome = "done"
        try:
            chunk: Chunk | None = first
            while chunk is not None:
                if chunk.text:
                    text = guard.feed(chunk.text)
                    if text:
                        shown.append(text)
                        yield _event("token", {"text": text})
                if chunk.finish_reason in ("length", "timeout"):
                    outcome = chunk.finish_reason
                chunk = next(upstream, None)
        except TutorUnavailable:
            outcome = "error"
        except GeneratorExit:  # the browser went away (Stop): closing `upstream` ends the model's request
            outcome = "stopped"
            raise
        finally:
            release()
            rest = guard.finish()
            if rest:
                shown.append(rest)
            store.add(user_id, lesson.id, step.id, exercise_id, "tutor", "".join(shown), sources, outcome)
        if rest:
            yield _event("token", {"text": rest})
        if outcome == "error":
            yield _event("error", {"message": gettext("The tutor stopped answering; try again in a minute.")})
        followed = written_in("".join(shown), language) if language != "en" else True
        yield _event("done", {"outcome": outcome, "removed": guard.dropped, "sources": sources, "notes": notes,
                              "language": {"asked": language, "followed": followed},
                              "language_note": language_note if followed is False else ""})

    response = Response(stream_with_context(events()), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each event on as it comes
    return response


@bp.route("/instructor/tutor/<path:exercise_id>")
@instructor_required
def summary(exercise_id: str) -> ResponseReturnValue:
    """What learners ask the tutor about one exercise, most asked first, without names."""
    try:
        exercise = get_content().exercise(exercise_id)
    except KeyError:
        abort(404, description=gettext("There is no exercise '%(id)s'.", id=exercise_id))
    total, askers, questions = store.most_asked(exercise.id)
    return render_template("tutor/summary.html", exercise=exercise, total=total, askers=askers,
                           questions=questions)
