"""The tutor: a chat panel on every card and exercise step that answers from what a teacher at the learner's
shoulder would see, through any OpenAI-compatible Chat Completions server (docs/tutor.md).

context.py builds what the model may see; prompt.py turns it into messages; client.py streams the answer;
guard.py keeps the solution and unopened hints out of it; admission.py holds the limits; store.py keeps the
conversations; views.py is the blueprint."""
from __future__ import annotations

from academy.tutor.views import bp

__all__ = ["bp"]
