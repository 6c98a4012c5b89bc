"""The recorded events of the learner's process, window by window (the checks and the figure read them):
grading process only."""
import scenario
from grader.checks.grading.judging import of_kind


def spans(events: list[dict]) -> list[list[dict]]:
    """Per window, its events: from its first micro-batch's forward up to the next window's first forward (the
    last window's: to the end). Fewer when the model was called fewer times than there are micro-batches."""
    forwards = of_kind(events, "forward")
    starts = [forwards[w[0]]["index"] for w in scenario.windows() if w[0] < len(forwards)]
    ends = starts[1:] + [float("inf")]
    return [[e for e in events if start <= e["index"] < end] for start, end in zip(starts, ends)]
