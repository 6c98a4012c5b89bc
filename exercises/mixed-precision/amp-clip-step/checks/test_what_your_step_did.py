"""What the verdict shows of the learner's train_step (grader/core/display.py): its calls, in order."""
from grader.checks.grading.judging import figure, show
from grader.checks.grading.suites import train_step_timeline


@figure
def test_show_the_calls(observed):
    show(trace=train_step_timeline(observed["events"], "backward() on scaler.scale(loss), then "
                                   "scaler.unscale_(optimizer), the clipping, and only then scaler.step(optimizer) "
                                   "and scaler.update()."))
