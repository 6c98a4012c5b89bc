"""What the tutor is shown about one learner at one step: what a teacher at the learner's shoulder would see.

The step's card or prompt, the learner's current editor code (numbered lines), the latest Run (output, error and
its line), the latest verdict as the learner sees it (each check's status and message, the timeline rows, the
figures' numbers) and the hints the learner already opened. Never the worked solution, an unopened hint or the
checks' code: the verdict goes through the same filters as the API's (web/shown.py: hints_on_request, learner_result),
so the tutor can only repeat what the learner's own page already shows. `forbidden` lists what the answer guard
(guard.py) must keep out of an answer all the same: the solution's code and the unopened hints' text.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from flask import url_for
from flask_babel import gettext
from sqlalchemy import select

from academy.data import progress
from academy.data.db import get_session
from academy.data.models import GRADED, Draft, JobStatus, Submission, SubmissionKind, User
from grader.core.course import Card, ExerciseStep, Lesson, Step

# How much of each piece a prompt carries: the embedded model reads a few thousand tokens in seconds on one core.
# A few hundred tokens each: on one CPU thread the embedded model reads ~150 tokens a second, and a small model
# loses its way in a long prompt; a larger server could take more (docs/tutor.md).
CARD_CHARS = 900
CODE_CHARS = 2500
OUTPUT_CHARS = 400
MAX_CARDS = 1  # the lesson's card most related to the question and the failed checks
MAX_TRACE_ROWS = 8


@dataclass(frozen=True)
class Source:
    """Something the context handed the model, which the answer then names as its source."""
    kind: str  # "card" | "check" | "prompt" | "run" | "code"
    title: str
    url: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "title": self.title, "url": self.url}


@dataclass
class TutorContext:
    lesson: Lesson
    step: Step
    evidence: str  # the user content block the model reads before the question
    sources: list[Source] = field(default_factory=list)
    forbidden_code: str = ""  # the worked solution, while the learner may not see it
    forbidden_hints: list[str] = field(default_factory=list)  # every hint the learner has not opened
    entry: str | None = None  # the function the exercise asks for
    solved: bool = False


def step_url(lesson: Lesson, step: Step, anchor: str | None = None) -> str:
    return url_for("lessons.step", lesson_id=lesson.id, step_id=step.id, _anchor=anchor)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z_][a-z0-9_]{2,}", text.lower())}


def related_cards(lesson: Lesson, step: Step, about: str) -> list[Card]:
    """The lesson's cards that share most words with `about` (the question, the failed checks' titles and
    messages), earlier cards first among equals; at most MAX_CARDS."""
    cards = [s for s in lesson.steps if isinstance(s, Card)]
    wanted = _words(about)
    scored = sorted(((len(wanted & _words(card.title + " " + card.markdown)), -i, card)
                     for i, card in enumerate(cards)), key=lambda item: (item[0], item[1]), reverse=True)
    return [card for score, _i, card in scored[:MAX_CARDS] if score > 0] or cards[:1]


def numbered(code: str) -> str:
    return "\n".join(f"{n:>3}| {line}" for n, line in enumerate(_clip(code, CODE_CHARS).splitlines(), 1))


def _latest(user: User, exercise_id: str, kind: SubmissionKind) -> Submission | None:
    query = select(Submission).where(Submission.user_id == user.id, Submission.exercise_id == exercise_id,
                                     Submission.status == JobStatus.DONE)
    query = query.where(GRADED) if kind == SubmissionKind.GRADE else query.where(Submission.kind == kind)
    return get_session().scalar(query.order_by(Submission.id.desc()).limit(1))


def _run_block(run: Submission | None) -> str:
    if run is None or not run.result_json:
        return "LATEST RUN: none yet."
    ran = json.loads(run.result_json)
    lines = [f"LATEST RUN (submission of a Run #{run.id}): status {ran.get('status')}"]
    if ran.get("output"):
        lines.append("printed:\n" + _clip(str(ran["output"]), OUTPUT_CHARS))
    if ran.get("returned") is not None:
        lines.append("returned: " + _clip(str(ran["returned"]), 300))
    error = ran.get("error") or {}
    if error.get("message"):
        lines.append(f"error at line {error.get('line')}: {_clip(str(error['message']), OUTPUT_CHARS)}")
    return "\n".join(lines)


def _run_error_line(run: Submission | None) -> int | None:
    if run is None or not run.result_json:
        return None
    return (json.loads(run.result_json).get("error") or {}).get("line")


def _verdict_block(submission: Submission | None) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The latest verdict as the learner's page shows it, its checks, and the hints the learner opened."""
    from academy.web.shown import hints_on_request, learner_result

    if submission is None or submission.result is None:
        return "LATEST VERDICT: no submission yet.", [], []
    result = learner_result(hints_on_request(submission, submission.result))
    lines = [f"LATEST VERDICT (submission #{submission.id}): "
             f"{'passed' if result.get('passed') else 'not passed'}, score {result.get('score')}"]
    error = result.get("error") or {}
    if error.get("message"):
        lines.append(f"error ({error.get('kind')}) at line {error.get('line')}: "
                     f"{_clip(str(error['message']), OUTPUT_CHARS)}")
    opened: list[str] = []
    for check in result.get("checks", []):
        where = f" (the learner's line {check['line']})" if check.get("line") else ""
        message = f": {_clip(str(check.get('message') or ''), 400)}" if check.get("message") else ""
        lines.append(f"- check '{check['id']}' ({check.get('title')}): {check.get('status')}{where}{message}")
        opened += [str(h) for h in check.get("hints") or []]
    trace = result.get("trace") or {}
    if trace.get("rows"):
        lines.append(f"TIMELINE ({trace.get('title')}): line | call | autocast | dtype | backward | grads | "
                     "step | scale after")
        for row in trace["rows"][:MAX_TRACE_ROWS]:
            lines.append(" | ".join(str(row.get(k)) for k in ("line", "call", "autocast", "dtype", "backward",
                                                                 "grads", "step", "scale"))
                         + ("  <- marked" if row.get("marked") else ""))
    for figure in result.get("figures", [])[:4]:
        lines.append(f"FIGURE '{figure.get('title')}': {_clip(_figure_numbers(figure), 500)}")
    if opened:
        lines.append("HINTS THE LEARNER ALREADY OPENED:\n" + "\n".join(f"- {h}" for h in opened))
    return "\n".join(lines), result.get("checks", []), opened


def _figure_numbers(figure: dict[str, Any]) -> str:
    if figure.get("bars"):
        return "; ".join(f"{b['label']}={b['value']:g} ({b['role']})" for b in figure["bars"])
    if figure.get("series"):
        return "; ".join(f"{s['name']}: " + ", ".join(f"({x:g}, {y:g})" for x, y in s["points"][:8])
                         for s in figure["series"])
    if figure.get("rows"):
        return " / ".join(", ".join(map(str, row)) for row in figure["rows"][:8])
    return str(figure.get("alt", ""))


def build_context(user: User, lesson: Lesson, step: Step, code: str | None, question: str) -> TutorContext:
    """Everything the tutor may see for `user` at `step`; `code` is the editor's text (None: the saved draft,
    else the starter)."""
    if not isinstance(step, ExerciseStep):
        card_text = step.page_markdown() or ""
        sources = [Source("card", step.title if isinstance(step, Card) else lesson.title, step_url(lesson, step))]
        evidence = f"THE CARD THE LEARNER IS READING: \"{sources[0].title}\"\n{_clip(card_text, CARD_CHARS * 2)}"
        return TutorContext(lesson, step, evidence, sources)
    exercise = step.exercise
    if code is None:
        draft = get_session().scalar(select(Draft).where(Draft.user_id == user.id, Draft.exercise_id == exercise.id))
        code = draft.code if draft is not None else exercise.starter_code()
    verdict_text, checks, opened = _verdict_block(_latest(user, exercise.id, SubmissionKind.GRADE))
    run_text = _run_block(_latest(user, exercise.id, SubmissionKind.RUN))
    # The checks that failed (a skipped one was not judged: the failure it names explains it).
    failing = [c for c in checks if c.get("status") not in ("passed", "skipped")]
    about = question + " " + " ".join(f"{c.get('title')} {c.get('message') or ''}" for c in failing)
    cards = related_cards(lesson, step, about)
    sources = [Source("card", card.title, step_url(lesson, card)) for card in cards]
    sources += [Source("check", str(c.get("title") or c["id"]), step_url(lesson, step, "result"))
                for c in failing[:3]]
    line = next((c["line"] for c in failing if c.get("line")), None) or _run_error_line(
        _latest(user, exercise.id, SubmissionKind.RUN))
    if line:  # the learner's own line that the verdict (or the Run's error) points at
        sources.append(Source("line", gettext("your line %(line)s", line=line), step_url(lesson, step, "editor")))
    parts = [f"EXERCISE \"{exercise.title}\": write {exercise.entry}({', '.join(exercise.params)}).",
             "PROMPT:\n" + _clip(exercise.prompt.strip(), CARD_CHARS)]
    parts += [f"CARD \"{card.title}\":\n{_clip(card.markdown.strip(), CARD_CHARS)}" for card in cards]
    parts += ["THE LEARNER'S CURRENT CODE (line numbers on the left):\n" + numbered(code), run_text, verdict_text]
    solved = progress.solution_open(user, exercise)
    hints = [h for check in exercise.checks for h in check.hints if h not in opened]
    return TutorContext(lesson, step, "\n\n".join(parts), sources,
                        forbidden_code="" if solved else exercise.solution_code(),
                        forbidden_hints=[] if solved else hints, entry=exercise.entry, solved=solved)
