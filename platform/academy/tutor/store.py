"""The conversations, kept per learner and step (TutorMessage), and what instructors read of them."""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import TutorMessage

SHOWN_TURNS = 20  # the last messages a step's panel shows


def conversation(user_id: int, lesson_id: str, step_id: str) -> list[TutorMessage]:
    rows = get_session().scalars(select(TutorMessage).where(
        TutorMessage.user_id == user_id, TutorMessage.lesson_id == lesson_id, TutorMessage.step_id == step_id)
        .order_by(TutorMessage.id.desc()).limit(SHOWN_TURNS)).all()
    return list(reversed(rows))


def history_pairs(rows: list[TutorMessage]) -> list[tuple[str, str]]:
    """(question, answer) pairs of finished answers, oldest first."""
    pairs, question = [], None
    for row in rows:
        if row.role == "learner":
            question = row.text
        elif question is not None and row.outcome == "done":
            pairs.append((question, row.text))
            question = None
    return pairs


def message_json(row: TutorMessage) -> dict[str, Any]:
    return {"role": row.role, "text": row.text, "sources": json.loads(row.sources_json or "[]"),
            "outcome": row.outcome, "at": row.created_at.isoformat() + "Z"}


def add(user_id: int, lesson_id: str, step_id: str, exercise_id: str | None, role: str, text: str,
        sources: list[dict[str, str]] | None = None, outcome: str | None = None) -> TutorMessage:
    db = get_session()
    row = TutorMessage(user_id=user_id, lesson_id=lesson_id, step_id=step_id, exercise_id=exercise_id, role=role,
                       text=text, sources_json=json.dumps(sources) if sources is not None else None, outcome=outcome)
    db.add(row)
    db.commit()
    return row


def question_key(text: str) -> str:
    """Questions that differ only in case, spacing and end punctuation count as one."""
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip("?!. ")


def most_asked(exercise_id: str, limit: int = 20) -> tuple[int, int, list[tuple[str, int, int]]]:
    """What learners ask about one exercise, without names: (questions, learners asking, [(question as first
    asked, times asked, learners who asked it)]), most asked first."""
    rows = get_session().execute(select(TutorMessage.user_id, TutorMessage.text).where(
        TutorMessage.exercise_id == exercise_id, TutorMessage.role == "learner").order_by(TutorMessage.id)).all()
    counts: Counter[str] = Counter()
    askers: dict[str, set[int]] = {}
    first: dict[str, str] = {}
    for user_id, text in rows:
        key = question_key(text)
        counts[key] += 1
        askers.setdefault(key, set()).add(user_id)
        first.setdefault(key, text.strip())
    ranked = sorted(counts, key=lambda k: (-counts[k], -len(askers[k]), k))[:limit]
    return len(rows), len({u for u, _ in rows}), [(first[k], counts[k], len(askers[k])) for k in ranked]
