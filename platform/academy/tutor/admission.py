"""Who may ask now: each learner's question budget (per minute and per day, counted from the stored questions,
so every web process agrees) and a bounded line for the answer slots of this process.

A slot is held while an answer streams; DLA_TUTOR_CONCURRENT slots per web process, DLA_TUTOR_QUEUE questions
may wait for one (each waiting request holds a gunicorn thread, hence the bound), anyone beyond is told the tutor
is busy and when to try again. A waiting question gives up after DLA_TUTOR_ANSWER_TIMEOUT_S.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import TutorMessage, utcnow


@dataclass(frozen=True)
class Refusal:
    status: int  # 429: this learner's budget; 503: the tutor is busy
    retry_after_s: int
    why: str  # "minute" | "day" | "busy"


def over_budget(user_id: int, per_minute: int, per_day: int) -> Refusal | None:
    """429 with the seconds until the oldest question in the window leaves it, or None."""
    now = utcnow()
    for window, allowed, why in ((timedelta(minutes=1), per_minute, "minute"), (timedelta(days=1), per_day, "day")):
        asked = get_session().scalars(select(TutorMessage.created_at).where(
            TutorMessage.user_id == user_id, TutorMessage.role == "learner", TutorMessage.created_at > now - window)
            .order_by(TutorMessage.created_at)).all()
        if len(asked) >= allowed:
            oldest = asked[len(asked) - allowed] if allowed > 0 else now
            wait = (oldest + window - now).total_seconds() if allowed > 0 else window.total_seconds()
            return Refusal(429, max(1, math.ceil(wait)), why)
    return None


class Line:
    """The answer slots of one process and the bounded line before them."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._busy = 0
        self._waiting = 0
        self._durations: list[float] = []  # the last answers' lengths, for "try again in N s"

    def retry_after_s(self) -> int:
        typical = sorted(self._durations)[len(self._durations) // 2] if self._durations else 20.0
        return max(1, math.ceil(typical * (1 + self._waiting)))

    def enter(self, slots: int, queue: int, wait_s: float) -> Refusal | None:
        """Take a slot (waiting in line for at most `wait_s`), or say when to come back."""
        with self._lock:
            if self._busy >= slots and self._waiting >= queue:
                return Refusal(503, self.retry_after_s(), "busy")
            self._waiting += 1
            deadline = time.monotonic() + wait_s
            try:
                while self._busy >= slots:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return Refusal(503, self.retry_after_s(), "busy")
                    self._lock.wait(left)
            finally:
                self._waiting -= 1
            self._busy += 1
            return None

    def leave(self, duration_s: float) -> None:
        with self._lock:
            self._busy -= 1
            self._durations = (self._durations + [duration_s])[-20:]
            self._lock.notify()

    @property
    def busy(self) -> int:
        return self._busy

