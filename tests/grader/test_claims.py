"""A failing message may not claim an outcome the grader's own evidence disproves (issue 28, item 3):
grader.host.claims, which `grader validate` and the corpus test apply to every mistake and corpus file."""
from grader.core.course import load_course
from grader.host.claims import contradictions

DDP = load_course().exercises["gradient-accumulation/ddp-accumulate"]
CLIP = load_course().exercises["mixed-precision/amp-clip-step"]
AMP = load_course().exercises["mixed-precision/amp-step"]


def result(checks, trace_rows=()):
    return {"checks": [{"id": i, "status": status, "message": message, "event": event}
                       for i, status, message, event in checks],
            "trace": {"rows": list(trace_rows)}}


def test_drift_claimed_while_both_processes_matched_the_reference_is_caught():
    # The message ddp-accumulate gave a manual all_reduce under no_sync before it checked the weights.
    found = contradictions(result([
        ("runs", "passed", "", None),
        ("syncs-once-per-window", "failed", "a window's last backward must all-reduce, or each process steps on "
                                            "its own gradients and their weights drift apart", None),
        ("matches-reference", "passed", "", None)]), DDP.checks)
    assert found and "syncs-once-per-window" in found[0] and "drift apart" in found[0]


def test_the_same_claim_with_the_weights_wrong_is_true():
    assert not contradictions(result([
        ("runs", "passed", "", None),
        ("syncs-once-per-window", "failed", "their weights drift apart (they ended apart here)", None),
        ("matches-reference", "skipped", "Not judged", None)]), DDP.checks)


def test_a_tiny_update_claimed_while_every_update_matched_is_caught():
    checks = [(c.id, "passed", "", None) for c in CLIP.checks if c.id != "unscale-then-clip"]
    checks.append(("unscale-then-clip", "failed", "the threshold cut them far too hard and the update was tiny", None))
    assert contradictions(result(checks), CLIP.checks)


def test_an_outcome_check_may_say_the_weights_differ():
    assert not contradictions(result([
        ("syncs-once-per-window", "passed", "", None),
        ("matches-reference", "failed", "your process's weights differ from a correct large-batch run", None)]),
        DDP.checks)


def test_float32_claimed_for_a_forward_whose_output_was_16_bit_is_caught():
    claim = "The forward pass (line 7) ran without autocast, in float32. Wrap model(x) in torch.autocast."
    rows = [{"event": 3, "call": "model(x)", "autocast": False, "dtype": "float16"}]
    assert contradictions(result([("autocast-scope", "failed", claim, 3)], rows), AMP.checks)
    rows[0]["dtype"] = "float32"
    assert not contradictions(result([("autocast-scope", "failed", claim, 3)], rows), AMP.checks)


def test_every_exercise_names_its_outcome_checks():
    for exercise in load_course().exercises.values():
        assert any(c.outcome for c in exercise.checks), f"{exercise.id}: no check has `outcome: true`"
