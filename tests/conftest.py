"""Fixtures shared by every test folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import REPO


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO








