"""What the verdict shows of the learner's loop (grader/core/display.py): the calls of one training step."""
from grader.checks.grading.judging import figure, show, timeline


@figure
def test_show_one_step(observed):
    show(trace=timeline(
        observed["events"], group_by="update", group_label="training step", title="What one training step did",
        caption="The calls of one step of your loop (the step a failing check names, else the first): model(x) "
                "and the loss under bfloat16 autocast, a plain backward() outside it, then optimizer.step()."))
