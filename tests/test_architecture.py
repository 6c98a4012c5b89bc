"""The import contract (docs/architecture.md): each package is one process's code, and imports run one way.

The table in docs/architecture.md is the contract: this test reads it, finds every import in grader/,
sandbox/, platform/academy/ and exercises/ (function-level ones too), and fails on any the table does
not allow. A deliberate back-edge must be caught, and the grader image must hold exactly what the
grading process may import."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOTS = {"grader": REPO / "grader", "sandbox": REPO / "sandbox", "academy": REPO / "platform" / "academy",
         "exercises": REPO / "exercises"}
OURS = ("grader", "sandbox", "academy")


def contract() -> dict[str, set[str]]:
    """package -> the packages it may import, from docs/architecture.md's table."""
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text[text.index("| package | runs in | may import |"):].split("\n\n")[0]
    rules = {}
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        rules[cells[0].strip("`")] = set(re.findall(r"`([\w.]+)`", cells[2]))
    return rules


def package_of(module: str, rules: dict[str, set[str]]) -> str | None:
    """The most specific package of the contract that holds `module`."""
    found = [p for p in rules if module == p or module.startswith(p + ".")]
    return max(found, key=len) if found else None


def module_name(path: Path) -> str:
    for top, root in ROOTS.items():
        if root in path.parents:
            parts = path.relative_to(root).with_suffix("").parts
            return ".".join([top, *[p for p in parts if p != "__init__"]])
    raise ValueError(path)


def imports(source: str) -> set[str]:
    """Every module `source` imports (absolute imports; `from a import b` counts as a.b when that is a module
    of ours, else as a: `from academy import jobs` imports academy.jobs, not the app factory's module)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                named = f"{node.module}.{alias.name}"
                found.add(named if named in our_modules() else node.module)
    return {name for name in found if name.split(".")[0] in OURS}


@functools.cache
def our_modules() -> frozenset[str]:
    return frozenset(our_sources())


def violations(sources: dict[str, str], rules: dict[str, set[str]]) -> list[str]:
    """'module imports target (package -> package)' for each import the contract does not allow."""
    found = []
    for module, source in sorted(sources.items()):
        own, targets = package_of(module, rules), imports(source)
        if own is None:  # a top-level package's own __init__ (grader/__init__.py) may hold nothing of ours
            assert not targets, f"{module} belongs to no package of docs/architecture.md"
        for target in sorted(targets):
            theirs = package_of(target, rules)
            if theirs is None:
                theirs = package_of(target.rsplit(".", 1)[0], rules)  # `from pkg import name`
            if theirs is not None and theirs != own and theirs not in rules[own]:
                found.append(f"{module} imports {target} ({own} -> {theirs})")
    return found


def our_sources() -> dict[str, str]:
    sources = {}
    for top, root in ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts or "templates" in path.relative_to(root).parts[:2]:
                continue
            sources[module_name(path)] = path.read_text(encoding="utf-8")
    return sources


def test_every_import_follows_the_contract():
    assert violations(our_sources(), contract()) == []


@pytest.mark.parametrize("module, source", [
    ("sandbox.jail.bad", "from grader.core.course import load_course\n"),
    ("sandbox.local", "def f():\n    import grader.host.sandboxes\n"),
    ("grader.core.bad", "from grader.harness import grade\n"),
    ("grader.learner.bad", "from grader.harness.channel import Referee\n"),
    ("grader.host.bad", "from grader.harness.grade import verdict_for\n"),
    ("grader.host.bad", "from sandbox.jail import Jail\n"),
    ("academy.bad", "from grader.learner import amp\n"),
    ("exercises.lesson.ex.checks.probe", "from grader.learner.amp import RECORDER\n"),
    ("grader.checks.bad", "from grader.reference.amp import amp_step\n"),
    ("grader.checks.bad", "from grader.harness.channel import serve\n"),
    ("grader.checks.grading.bad", "from grader.harness.plugin import CheckRun\n"),
    ("grader.checks.referee.bad", "from grader.harness import channel\n"),
    ("grader.checks.learner.bad", "from grader.checks.grading.judging import check\n"),
    ("grader.checks.learner.bad", "from grader.checks.referee.outside import Referee\n"),
    ("grader.learner.bad", "import grader.reference.underflow\n"),
    ("grader.harness.bad", "from grader.reference import amp\n"),
])
def test_a_back_edge_is_caught(module, source):
    assert violations({module: source}, contract()) != []


def test_the_table_names_real_packages():
    rules = contract()
    for package in rules:
        top, *rest = package.split(".")
        folder = ROOTS[top].joinpath(*rest)
        assert folder.is_dir() or folder.with_suffix(".py").is_file(), package
    for allowed in rules.values():
        assert allowed <= set(rules), allowed - set(rules)


def test_the_image_holds_what_the_grading_process_may_import():
    from grader.host.image import IMAGE_PACKAGES

    rules = contract()
    reach, todo = set(), ["grader.harness", "grader.checks", "grader.reference"]
    while todo:
        package = todo.pop()
        if package not in reach:
            reach.add(package)
            todo.extend(rules[package])
    shipped = {name.removesuffix(".py").replace("/", ".").removesuffix(".__init__") for name in IMAGE_PACKAGES}
    assert shipped - {"grader", "sandbox"} == reach


# What an exercise's learner side loads (the probe, and what Run calls the function with): these modules and
# every checks/ module they import end up in the learner's process, so none may import grading-only code.
LEARNER_SIDE = ("checks/probe.py", "example.py")
# The course's shared code (exercises/_library/, imported as courselib: grader/learner/entry.py import_checks) has
# grading-only modules too: its correct runs, its checks, its referee's secrets.
GRADING_ONLY = ("reference", "grader.reference", "courselib.reference", "courselib.checks", "courselib.referee")


def learner_side_imports(folder: Path) -> dict[str, set[str]]:
    """module of the exercise at `folder` that a learner process loads -> every module it imports (absolute
    imports), following the exercise's own checks/ modules and the course's shared ones (courselib.NAME, in the
    `_library` folder beside the lessons) transitively."""
    checks, library, found = folder / "checks", folder.parents[1] / "_library", {}
    todo = [folder / name for name in LEARNER_SIDE if (folder / name).is_file()]
    while todo:
        path = todo.pop()
        key = f"courselib.{path.stem}" if path.parent == library else path.name
        if key in found:
            continue
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        found[key] = names
        todo += [checks / f"{name}.py" for name in names if "." not in name and (checks / f"{name}.py").is_file()]
        todo += [library / f"{name[10:]}.py" for name in names if name.startswith("courselib.")
                 and "." not in name[10:] and (library / f"{name[10:]}.py").is_file()]
    return found


def grading_only(name: str) -> bool:
    return any(name == g or name.startswith(g + ".") for g in GRADING_ONLY) or name.startswith(("test_", "referee"))


@pytest.mark.parametrize("folder", sorted(p.parent for p in ROOTS["exercises"].rglob("exercise.yaml")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_learner_side_module_of_an_exercise_imports_grading_only_code(folder):
    """The probe's and the example's import closure within checks/ holds no reference (issue 48): a module the
    learner's process imports can be reached from its code."""
    wrong = {module: sorted(n for n in names if grading_only(n))
             for module, names in learner_side_imports(folder).items()}
    assert {m: n for m, n in wrong.items() if n} == {}


def test_a_probe_that_reaches_the_course_library_s_reference_is_caught(tmp_path):
    exercise, library = tmp_path / "lesson" / "ex", tmp_path / "_library"
    (exercise / "checks").mkdir(parents=True)
    library.mkdir()
    (exercise / "checks" / "probe.py").write_text("from courselib.tasks import Task\n")
    (library / "tasks.py").write_text("from courselib.reference import run\n")
    assert "courselib.reference" in learner_side_imports(exercise)["courselib.tasks"]
    assert grading_only("courselib.reference") and grading_only("courselib.checks")
    assert not grading_only("courselib.tasks")


def test_a_probe_that_imports_the_reference_is_caught(tmp_path):
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "probe.py").write_text("import scenario\n")
    (tmp_path / "checks" / "scenario.py").write_text("from reference import run\n")
    assert "reference" in learner_side_imports(tmp_path)["scenario.py"]
    assert grading_only("reference") and grading_only("grader.reference.amp")


# Packages of docs/architecture.md's table whose modules import one another without a cycle, and which other
# modules import only as a whole (the package's __init__ names what they use), never one of its modules.
SEALED = ("academy.lti", "academy.jobs", "academy.i18n")
# Packages of the table whose modules import one another without a cycle, though others may import their modules.
ACYCLIC = (*SEALED, "academy.data", "academy.web", "academy.tutor", "academy.cli", "academy.runners")


def imported_modules(source: str, modules: set[str]) -> set[str]:
    """The modules among `modules` that `source` imports (function-level imports too): `from a import b` is a.b
    when that is one of `modules`, else a."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                named = f"{node.module}.{alias.name}"
                found.add(named if named in modules else node.module)
    return found & modules


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def cycle_in(sources: dict[str, str], package: str) -> list[str]:
    """One circle of imports among `package`'s modules (['a', 'b', 'a']), or [] when there is none."""
    modules = {m for m in sources if inside(m, package)}
    graph = {m: sorted(imported_modules(sources[m], modules) - {m}) for m in sorted(modules)}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for target in graph[module]:
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := walk(target)):
                return found
        state[module] = 2
        path.pop()
        return []

    for module in graph:
        if module not in state and (found := walk(module)):
            return found
    return []


def reaches_in(sources: dict[str, str], package: str) -> list[str]:
    """'module imports target' for each module outside `package` that imports one of its modules."""
    modules = {m for m in sources if inside(m, package)}
    return [f"{module} imports {target}" for module, source in sorted(sources.items()) if not inside(module, package)
            for target in sorted(imported_modules(source, modules)) if target != package]


@pytest.mark.parametrize("package", ACYCLIC)
def test_a_package_has_no_cycle_inside(package):
    sources = our_sources()
    assert package in contract() and package in sources
    assert cycle_in(sources, package) == []


@pytest.mark.parametrize("package", SEALED)
def test_a_sealed_package_is_imported_whole(package):
    sources = our_sources()
    assert package in contract() and package in sources
    assert reaches_in(sources, package) == []


def test_a_cycle_inside_a_package_and_a_reach_into_it_are_caught():
    sources = {"academy.lti": "from academy.lti import a\n", "academy.lti.a": "from academy.lti.b import f\n",
               "academy.lti.b": "def f():\n    from academy.lti import a\n",
               "academy.jobs": "from academy import lti\n"}
    assert cycle_in(sources, "academy.lti") == ["academy.lti.a", "academy.lti.b", "academy.lti.a"]
    assert reaches_in(sources, "academy.lti") == []
    sources["academy.lti.b"] = "import json\n"
    sources["academy.cli"] = "def f():\n    from academy.lti.a import g\n"
    assert cycle_in(sources, "academy.lti") == []
    assert reaches_in(sources, "academy.lti") == ["academy.cli imports academy.lti.a"]
    sources["academy.lti.b"] = "from academy.lti import FRAMEABLE\n"  # a name of the package's __init__
    assert cycle_in(sources, "academy.lti") == ["academy.lti", "academy.lti.a", "academy.lti.b", "academy.lti"]


def rows_importing_below(rules: dict[str, set[str]]) -> list[str]:
    """'row may import later-row' for each row of the contract that names a package not above it: read top to
    bottom the table is a stack of floors, so no import, and no chain of them, runs back up (no cycle between
    packages, e.g. the web's pages and the tutor, or the commands and the instructor pages)."""
    order = list(rules)
    return [f"{row} may import {other}" for index, row in enumerate(order)
            for other in sorted(rules[row]) if other in rules and order.index(other) >= index]


def test_the_contract_is_a_stack_of_floors():
    assert rows_importing_below(contract()) == []


def test_a_row_that_imports_a_floor_below_is_caught():
    rules = {"academy.data": {"academy.settings"}, "academy.settings": set(), "academy.web": {"academy.data"}}
    assert rows_importing_below(rules) == ["academy.data may import academy.settings"]
    del rules["academy.data"]
    assert rows_importing_below(rules) == []


# --- the tests' own modules: none imports a test module or a conftest (issue 52). Shared fixtures live in a
# conftest.py above the tests that use them (pytest finds them there); shared code lives in tests/support.

def suite_sources() -> dict[str, str]:
    """Every module of tests/ by path: test modules, conftests, tests/support, a folder's helpers; not the corpus's
    submissions (tests/corpus/<lesson>/...), which are learners' files."""
    corpus = REPO / "tests" / "corpus"
    return {path.relative_to(REPO).as_posix(): path.read_text() for path in sorted((REPO / "tests").rglob("*.py"))
            if "__pycache__" not in path.parts and (path.parent == corpus or not path.is_relative_to(corpus))}


def test_module_of(name: str) -> str | None:
    """The test module or conftest that importing `name` imports (tests.web.test_races for
    tests.web.test_races.race_app), or None."""
    parts = name.split(".")
    if parts[0] != "tests":
        return None
    ends = [i for i, part in enumerate(parts) if i and (part == "conftest" or part.startswith("test_"))]
    return ".".join(parts[:ends[0] + 1]) if ends else None


test_module_of.__test__ = False  # pytest: a helper, whatever its name


def imported_test_modules(path: str, source: str) -> list[str]:
    """"PATH imports MODULE" for each test module (tests.*.test_*) or conftest (tests.conftest, tests.*.conftest)
    that `source` imports, function-level imports too; relative ones are resolved from PATH's package."""
    package = path.removesuffix(".py").replace("/", ".").split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package[:len(package) - node.level + 1], *filter(None, [node.module])]) \
                if node.level else node.module
            # `from tests.web import test_races` imports the module test_races itself.
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {f"{path} imports {module}" for name in names if (module := test_module_of(name))}
    return sorted(found)


def test_no_test_module_imports_a_test_module_or_a_conftest():
    found = [line for path, source in suite_sources().items() for line in imported_test_modules(path, source)]
    assert not found, ("a fixture that several folders share belongs in the conftest.py above them, shared code "
                       "in tests/support:\n" + "\n".join(found))


def test_an_import_of_a_test_module_or_a_conftest_is_caught():
    planted = {
        "tests/abuse/test_planted.py": "from tests.web.test_races import race_app\n"
                                       "import tests.browser.conftest\n"
                                       "from tests.web import test_instructor, conftest\n"
                                       "from tests.support.apps import new_session\n"
                                       "def test_x():\n    from tests.conftest import work_unit\n",
        "tests/web/test_planted.py": "from .test_waiting import CODE\nfrom . import conftest\n"
                                     "from ..support import paths\nfrom .. import test_workers\n",
        "tests/support/planted.py": "from tests.browser.test_phone import PHONE\n",
    }
    found = sorted(line for path, source in planted.items() for line in imported_test_modules(path, source))
    assert found == ["tests/abuse/test_planted.py imports tests.browser.conftest",
                     "tests/abuse/test_planted.py imports tests.conftest",
                     "tests/abuse/test_planted.py imports tests.web.conftest",
                     "tests/abuse/test_planted.py imports tests.web.test_instructor",
                     "tests/abuse/test_planted.py imports tests.web.test_races",
                     "tests/support/planted.py imports tests.browser.test_phone",
                     "tests/web/test_planted.py imports tests.test_workers",
                     "tests/web/test_planted.py imports tests.web.conftest",
                     "tests/web/test_planted.py imports tests.web.test_waiting"]
    assert len(suite_sources()) > 150 and "tests/support/paths.py" in suite_sources()
