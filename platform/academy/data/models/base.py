"""What every table shares: the declarative base and the clock the rows are stamped with."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.orm import DeclarativeBase


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)  # stored naive, always UTC


class Base(DeclarativeBase):
    pass
