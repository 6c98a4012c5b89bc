"""Each line of a validate report says which checks the file failed (and which were reported skipped) next to
what it declares, and what is wrong when they differ (grader/validate.py: Case.summary, Case.report)."""
from pathlib import Path

from grader.host.validate import Case


def case(failed=(), skipped=(), expect_fail=(), expect_skip=None, error=None, may_pass=()):  # noqa: ANN001, ANN201
    checks = [{"id": cid, "status": "failed", "because": None, "message": f"{cid} went wrong"} for cid in failed]
    checks += [{"id": cid, "status": "skipped", "because": failed[0], "message": ""} for cid in skipped]
    checks += [{"id": cid, "status": "passed", "because": None, "message": ""}
               for cid in ["runs", *may_pass] if cid not in (*failed, *skipped)]
    status = "error" if error else ("failed" if failed else "passed")
    result = {"status": status, "checks": checks, "error": {"message": error} if error else None}
    return Case("l/e", Path("mistakes/m.py"), frozenset(expect_fail), result, (),
                None if expect_skip is None else frozenset(expect_skip), frozenset(may_pass))


def test_solution_line():
    assert case(expect_skip=()).report() == "passes every check"


def test_a_mistake_that_fails_what_it_declares():
    ok = case(["scaled-backward"], ["matches-reference", "step-update-order"], ["scaled-backward"],
              ["step-update-order", "matches-reference"])
    assert ok.ok and ok.report() == ("failed scaled-backward (declared: scaled-backward); skipped matches-reference, "
                                     "step-update-order (declared: matches-reference, step-update-order)")
    assert case(["grads-cleared"], ["matches-reference"], ["grads-cleared"]).report() == \
        "failed grads-cleared (declared: grads-cleared); skipped matches-reference"


def test_a_mistake_that_fails_something_else_says_both_and_why():
    wrong = case(["autocast-scope"], expect_fail=["scaled-backward"])
    assert not wrong.ok
    assert wrong.report() == ("failed autocast-scope (declared: scaled-backward); expected to fail but passed: "
                              "scaled-backward; failed unexpectedly: autocast-scope (autocast-scope went wrong)")
    missed = case(expect_fail=["scaled-backward"])
    assert missed.report() == "failed nothing (declared: scaled-backward); expected to fail but passed: scaled-backward"
    crashed = case(expect_fail=["runs"], error="Your code raised ValueError")
    assert crashed.report() == "failed nothing (declared: runs); error: Your code raised ValueError"


def test_a_may_pass_check_may_pass_or_land_as_declared_but_not_fail_otherwise():
    """`# may-pass:` (the mistake's effect on that check is under its tolerance for some seeds): skipped as
    declared or passed are both right; failed where skipped is declared, or another check skipped, is not."""
    declared = {"expect_fail": ["scheduler"], "expect_skip": ["ema", "matches-reference"],
                "may_pass": ["matches-reference"]}
    assert case(["scheduler"], ["ema", "matches-reference"], **declared).ok
    passed = case(["scheduler"], ["ema"], **declared)
    assert passed.ok and passed.report() == ("failed scheduler (declared: scheduler); skipped ema (declared: ema); "
                                             "passed matches-reference (may pass with this seed)")
    assert not case(["scheduler", "matches-reference"], ["ema"], **declared).ok
    assert not case(["scheduler"], [], **declared).ok  # ema is not may-pass
