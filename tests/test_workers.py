"""The suite's split over two workers (tests/support/workers.py): what one worker runs as a whole."""
from types import SimpleNamespace

import pytest

from tests.support.workers import ENGINE_UNIT, pytest_collection_modifyitems, work_unit


def test_a_module_is_one_unit_and_every_docker_engine_test_is_one():
    assert work_unit("tests/corpus/test_corpus.py::test_corpus_file[a/b/c]") == "tests/corpus/test_corpus.py"
    assert work_unit("tests/web/test_app.py::TestX::test_y") == "tests/web/test_app.py"
    for nodeid in ("tests/integrity/test_memory.py::test_x[docker]", "tests/sandbox/test_pool.py::test_y",
                   "tests/deploy/test_compose.py::test_z"):
        assert work_unit(nodeid) == ENGINE_UNIT, nodeid
    assert work_unit("tests/deploy/test_compose_file.py::test_z") == "tests/deploy/test_compose_file.py"


def _item(nodeid: str, docker: bool) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if docker and name == "docker"
                           else None)


def test_a_docker_test_outside_the_engine_unit_is_refused_at_collection():
    pytest_collection_modifyitems([_item("tests/sandbox/test_pool.py::test_a", True),
                                   _item("tests/web/test_app.py::test_b", False)])
    with pytest.raises(pytest.UsageError, match="tests/web/test_app.py::test_c"):
        pytest_collection_modifyitems([_item("tests/web/test_app.py::test_c", True)])


PROBE = '''
import json, os, time
import pytest

def _note(name, started):
    with open(os.environ["SPANS"], "a") as f:
        f.write(json.dumps([name, started, time.monotonic()]) + "\\n")

{tests}
'''


def test_an_alone_test_runs_while_the_other_worker_runs_nothing(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from tests.support.paths import REPO

    (tmp_path / "conftest.py").write_text("from tests.support.workers import (pytest_runtest_protocol,  # noqa: F401\n"
                                          "                                    pytest_sessionfinish)\n"
                                          "def pytest_configure(config):\n"
                                          "    config.addinivalue_line('markers', 'alone: x')\n")
    busy = "\n".join(f"def test_busy_{i}():\n    t = time.monotonic(); time.sleep(0.3); _note('busy', t)\n"
                     for i in range(8))
    alone = ("@pytest.mark.alone\ndef test_alone():\n    t = time.monotonic(); time.sleep(0.5); _note('alone', t)\n")
    (tmp_path / "test_busy.py").write_text(PROBE.format(tests=busy))
    (tmp_path / "test_alone.py").write_text(PROBE.format(tests=alone + busy.replace("busy_", "b2_")))
    spans, temp = tmp_path / "spans.jsonl", tmp_path / "temp"
    temp.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "load", "-p", "no:cacheprovider",
                           "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), "SPANS": str(spans), "TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    (_, start, end), = [row for row in rows if row[0] == "alone"]
    assert len(rows) == 17
    overlapping = [row for row in rows if row[0] != "alone" and row[1] < end and row[2] > start]
    assert not overlapping, f"ran beside the alone test: {overlapping}"
    assert not list(temp.glob("dla-tests-*.lock")), "the run's lock file was left behind"


def test_a_unit_that_waits_goes_beside_one_that_computes_and_never_beside_another_that_waits():
    from tests.support.workers import next_unit

    queue = [ENGINE_UNIT, "tests/corpus/test_corpus.py", "tests/browser/test_a.py", "tests/grader/test_cli.py",
             "tests/queue/test_queue.py"]
    assert next_unit(queue, beside=[]) == ENGINE_UNIT  # the first worker: the largest unit
    assert next_unit(queue[1:], beside=[ENGINE_UNIT]) == "tests/browser/test_a.py"  # the engine computes
    assert next_unit(queue[1:], beside=["tests/grader/test_cli.py"]) == "tests/browser/test_a.py"
    assert next_unit(queue[1:], beside=["tests/lti/test_lti13.py"]) == "tests/corpus/test_corpus.py"
    assert next_unit(["tests/web/test_app.py"], beside=["tests/lti/test_lti13.py"]) == "tests/web/test_app.py"
    assert next_unit(["tests/grader/test_cli.py"], beside=[ENGINE_UNIT]) == "tests/grader/test_cli.py"


def test_two_units_that_wait_never_run_side_by_side_while_one_that_computes_is_left(tmp_path):
    """The real scheduler (tests/support/workers.py's ByWorkUnit) on two workers: xdist's own order, largest first,
    would run the two units that wait together at the end."""
    import json
    import os
    import subprocess
    import sys

    from tests.support.paths import REPO

    (tmp_path / "conftest.py").write_text("from tests.support.workers import (  # noqa: F401\n"
                                          "    pytest_xdist_make_scheduler)\n")
    for folder, name, count in (("grader", "test_c1", 6), ("grader", "test_c2", 6), ("web", "test_w1", 3),
                                ("web", "test_w2", 3)):
        tests = "".join(f"def test_{i}():\n    t = time.monotonic(); time.sleep(0.3); _note(__name__, t)\n"
                        for i in range(count))
        (tmp_path / "tests" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / folder / f"{name}.py").write_text(PROBE.format(tests=tests))
    spans = tmp_path / "spans.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "-c", os.devnull,
                           "--rootdir", str(tmp_path), "--import-mode", "importlib", str(tmp_path / "tests")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO), "SPANS": str(spans)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    assert len(rows) == 18
    waiting = [row for row in rows if "test_w" in row[0]]
    together = [(a, b) for a in waiting for b in waiting if a[0] != b[0] and a[1] < b[2] and b[1] < a[2]]
    assert not together, f"two units that wait ran side by side: {together}"
