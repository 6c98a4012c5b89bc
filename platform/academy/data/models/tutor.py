"""The tutor's messages (academy/tutor/)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from academy.data.models.base import Base, utcnow


class TutorMessage(Base):
    """One turn of a learner's conversation with the tutor about one step: the question, or the answer as the
    learner was shown it (after the guard), with the sources it cited. Kept per learner and step; a guest's move
    to the account they sign up for or merge into (progress.merge_guest)."""
    __tablename__ = "tutor_messages"
    __table_args__ = (Index("ix_tutor_messages_user_step", "user_id", "lesson_id", "step_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    lesson_id: Mapped[str] = mapped_column(String(100))
    step_id: Mapped[str] = mapped_column(String(100))
    # The exercise the step is (None on a card): the instructor's per-exercise summary reads it.
    exercise_id: Mapped[str | None] = mapped_column(String(200), index=True)
    role: Mapped[str] = mapped_column(String(16))  # "learner" | "tutor"
    text: Mapped[str] = mapped_column(Text)
    sources_json: Mapped[str | None] = mapped_column(Text)  # the tutor's: [{"title", "url"}]
    # How the answer ended: "done", "length" (max_tokens), "stopped" (the learner), "timeout", "error".
    outcome: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
