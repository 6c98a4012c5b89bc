"""The answer guard (academy/tutor/guard.py) on its own: what it holds back, drops and lets stream."""
from __future__ import annotations

from academy.tutor.guard import Guard
from tests.support.paths import EXERCISES
from tests.support.tutor import LESSON, STEP

SOLUTION = (EXERCISES / LESSON / STEP / "solution.py").read_text()
HINT = "Put `out = model(x)` and `loss = loss_fn(out, y)` inside `with torch.autocast(device_type='cuda'):`."


def streamed(guard: Guard, text: str, size: int = 3) -> tuple[str, list[str]]:
    """The text as shown, fed `size` characters at a time, and what each feed let out."""
    pieces = [guard.feed(text[i:i + size]) for i in range(0, len(text), size)]
    return "".join(pieces) + guard.finish(), pieces


def test_the_solution_with_other_names_in_a_fence_is_removed_before_any_of_it_shows() -> None:
    answer = ("Look at your line 11.\n```python\ndef train_step(m, opt, s, f, a, b):\n    opt.zero_grad()\n"
              "    with torch.autocast(device_type='cuda'):\n        l = f(m(a), b)\n    s.scale(l).backward()\n"
              "    s.step(opt)\n    s.update()\n    return l\n```\nWhat does line 11 call backward on?")
    guard = Guard(SOLUTION, [], "train_step", removed_solution="[removed]")
    shown, _ = streamed(guard, answer)
    assert "zero_grad" not in shown and "backward" not in shown.split("[removed]")[0]
    assert "[removed]" in shown and "Look at your line 11." in shown and "What does line 11" in shown
    assert guard.dropped == 1


def test_three_solution_lines_without_a_fence_are_removed_two_are_kept() -> None:
    three = "Try:\noptimizer.zero_grad()\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nThen think.\n"
    shown, _ = streamed(Guard(SOLUTION, [], "train_step", removed_solution="[removed]"), three)
    assert "zero_grad" not in shown and "scaler.step" not in shown and "[removed]" in shown and "Then think." in shown
    two = "Compare:\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nWhat differs from your line 11?\n"
    shown, _ = streamed(Guard(SOLUTION, [], "train_step", removed_solution="[removed]"), two)
    assert shown == two


def test_a_finished_function_unlike_the_solution_is_removed_too() -> None:
    answer = ("```\ndef train_step(model, optimizer, scaler, loss_fn, x, y):\n    a = 1\n    b = 2\n"
              "    return a + b\n```\n")
    shown, _ = streamed(Guard(SOLUTION, [], "train_step", removed_solution="[removed]"), answer)
    assert "def train_step" not in shown and "[removed]" in shown


def test_an_unopened_hint_is_removed_and_prose_streams_as_it_comes() -> None:
    guard = Guard(SOLUTION, [HINT], "train_step", removed_hint="[hint removed]")
    shown, pieces = streamed(guard, "Your scale grows each step. " * 3 + "\n" + HINT + "\nWhat does autocast do?\n")
    assert HINT not in shown and "out = model(x)" not in shown and "[hint removed]" in shown
    assert "What does autocast do?" in shown
    assert pieces[3] != "" and pieces[3] in "Your scale grows each step. "  # prose left before its line ended
