"""A learner's first `record_function` under `profile(with_stack=True)` imports nothing (issue 28): torch's
Python tracer keeps bare pointers to the name and file of every code object it traces, so a module imported
inside the profiled region (torch.profiler._cupti_monitor, on record_function's first __enter__) left freed
memory in the profile, and `key_averages(group_by_stack_n=5)` raised UnicodeDecodeError for correct code in
about one warm grading of four. The grading process's warm_up imports it before any learner code runs."""
import subprocess
import sys

SCRIPT = """
import sys
from grader.harness.grade import warm_up
warm_up()
import torch
from torch.profiler import ProfilerActivity, profile, record_function
before = set(sys.modules)
with profile(activities=[ProfilerActivity.CPU], with_stack=True):
    with record_function("step"):
        torch.ones(4).sum()
print(sorted(set(sys.modules) - before))
"""


def test_nothing_is_imported_inside_a_learners_first_profiled_region():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = done.stdout.strip().splitlines()[-1]
    assert "_cupti_monitor" not in imported, imported
