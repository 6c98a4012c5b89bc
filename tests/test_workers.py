"""The suite's split over two workers (tests/conftest.py): what one worker runs as a whole."""
from types import SimpleNamespace

import pytest

from tests.conftest import ENGINE_UNIT, pytest_collection_modifyitems, work_unit


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

    from tests.helpers import REPO

    (tmp_path / "conftest.py").write_text("from tests.conftest import (pytest_runtest_protocol,  # noqa: F401\n"
                                          "                            pytest_sessionfinish)\n"
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
