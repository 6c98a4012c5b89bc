"""Secrets live on the grading side (issue 26): what a referee draws for a check to compare against (data,
orders, which process measures) comes from the operating system's randomness, never from the run's seed,
which the learner's process can read. Each exercise's referee is built twice with different seeds and one
fixed stand-in for `secrets`: every value it holds must come out the same, so none depends on the seed."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from grader.core.course import load_course

BUILD_TWICE = """
    import json, random, sys
    from pathlib import Path

    checks = Path({checks!r})
    from grader.learner.entry import import_checks
    import_checks(checks)  # as the grading process does: the checks folder, and the course's shared code


    class FixedSecrets:  # one stand-in source, the same for both referees
        def __init__(self):
            self.source = random.Random(1234)

        def randbelow(self, n):
            return self.source.randrange(n)

        def SystemRandom(self):
            return self.source


    import importlib.util
    spec = importlib.util.spec_from_file_location("exercise_referee", checks / "referee.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    held = []
    for seed in (11, 2**30 + 7):
        module.secrets = FixedSecrets()
        referee = module.Referee(seed, "cpu")
        plain = (int, str, list, tuple)
        held.append({{k: v for k, v in vars(referee).items() if k != "seed" and isinstance(v, plain)}})
    print(json.dumps(held))
"""


def referees():
    return sorted(e.id for e in load_course().exercises.values() if (e.checks_dir / "referee.py").exists())


@pytest.mark.parametrize("exercise", referees())
def test_no_referee_draws_from_the_run_seed(exercise):
    checks = load_course().exercises[exercise].checks_dir
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(BUILD_TWICE.format(checks=str(checks)))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = json.loads(proc.stdout.strip().splitlines()[-1])
    assert first == second, f"{exercise}'s referee holds values that depend on the run's seed"
    assert "secrets" in (checks / "referee.py").read_text(), f"{exercise}'s referee draws nothing from secrets"
