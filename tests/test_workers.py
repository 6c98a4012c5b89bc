"""The suite's split over two workers (tests/conftest.py): what one worker runs as a whole."""
from types import SimpleNamespace

import pytest

from tests.conftest import pytest_collection_modifyitems, work_unit


def test_a_module_is_one_unit_and_every_docker_engine_test_is_one():
    assert work_unit("tests/corpus/test_corpus.py::test_corpus_file[a/b/c]") == "tests/corpus/test_corpus.py"
    assert work_unit("tests/web/test_app.py::TestX::test_y") == "tests/web/test_app.py"
    for nodeid in ("tests/integrity/test_memory.py::test_x[docker]", "tests/sandbox/test_pool.py::test_y",
                   "tests/deploy/test_compose.py::test_z"):
        assert work_unit(nodeid) == "docker engine", nodeid
    assert work_unit("tests/deploy/test_compose_file.py::test_z") == "tests/deploy/test_compose_file.py"


def _item(nodeid: str, docker: bool) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if docker and name == "docker"
                           else None)


def test_a_docker_test_outside_the_engine_unit_is_refused_at_collection():
    pytest_collection_modifyitems([_item("tests/sandbox/test_pool.py::test_a", True),
                                   _item("tests/web/test_app.py::test_b", False)])
    with pytest.raises(pytest.UsageError, match="tests/web/test_app.py::test_c"):
        pytest_collection_modifyitems([_item("tests/web/test_app.py::test_c", True)])
