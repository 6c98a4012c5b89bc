"""What the verdict shows of the learner's train_step (grader/display.py): its calls, in order."""
from grader.checks.judging import figure, show, timeline


@figure
def test_show_the_calls(observed):
    show(trace=timeline(
        observed["events"], group_by="call", group_label="call of train_step", title="What your step did",
        caption="The calls your train_step made, in order (the call a failing check names, else the first): "
                "backward() on scaler.scale(loss), then scaler.unscale_(optimizer), the clipping, and only then "
                "scaler.step(optimizer) and scaler.update()."))
