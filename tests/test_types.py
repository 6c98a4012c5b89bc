"""The type checker's configuration is really strict where pyproject.toml says (scripts/test runs mypy on it).

A function without annotations and a bare generic are errors only under mypy's strict flags: planted into one module
of each strict package (mypy reads the planted copy instead of the file: --shadow-file, nothing on disk changes),
each must be reported there. A configuration that lost its strictness, or a package that fell out of `files`, passes
them silently and fails here.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One small module of each package the configuration makes strict.
STRICT_MODULES = ["sandbox/jail/identity.py", "platform/academy/jobs/kinds.py", "grader/core/wire.py",
                  "grader/host/claims.py", "grader/harness/view.py", "grader/learner/helper.py",
                  "grader/checks/grading/events.py", "grader/reference/amp.py"]

PLANTED = '''

def planted_untyped(value):
    return value


def planted_bare(value: dict) -> None:
    return None
'''


def test_strict_modules_are_among_the_files_scripts_test_checks() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    for module in STRICT_MODULES:
        assert any(module.startswith(folder.rstrip("/") + "/") for folder in config["files"]), module


def test_strict_packages_reject_what_only_strict_mode_rejects(tmp_path: Path) -> None:
    shadows = []
    for module in STRICT_MODULES:
        planted = tmp_path / module.replace("/", "__")
        planted.write_text((ROOT / module).read_text() + PLANTED)
        shadows += ["--shadow-file", module, str(planted)]
    # A copy of the project's cache (scripts/test has just filled it: a few seconds instead of a cold run's ~10), never
    # the cache itself: it must not keep results of the planted copies.
    cache = tmp_path / "cache"
    if (ROOT / ".cache" / "mypy").is_dir():
        shutil.copytree(ROOT / ".cache" / "mypy", cache)
    found = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *shadows,
                            *STRICT_MODULES], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert found.returncode == 1, found.stdout + found.stderr
    for module in STRICT_MODULES:
        errors = [line for line in found.stdout.splitlines() if line.startswith(f"{module}:")]
        assert any("[no-untyped-def]" in line for line in errors), (module, found.stdout)
        assert any("[type-arg]" in line for line in errors), (module, found.stdout)
