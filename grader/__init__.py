"""Deep Learning Academy grader: course files, grading harness, sandboxes glue and the `grader` CLI."""
