"""What goes into the grader image, and whether a built image is still current.

The image holds what the grading process needs, chosen by package (`IMAGE_PACKAGES`): the grader's core,
harness, learner side, checks API and shared correct runs (root's alone there: sandbox/Dockerfile), and
the sandbox's jail, settings and fork server; never the host's code (the CLI, `run_submission`,
validation, scaffolding) or the sandbox's launchers. Per exercise, only
`exercise.yaml`, `example.py` (what a Run calls the learner's function with) and `checks/`: never a
reference solution, a starter or a mistake; and the course's shared code its checks import (`_library/`).
`sandbox/build-images` assembles the build context with `write_context`; the docker sandbox compares the
image's `dla.content` label with `content_fingerprint()` so it never grades with checks older than the ones
on disk.

    python -m grader.host.image context DEST   # write the build context, print its fingerprint
    python -m grader.host.image fingerprint    # print the fingerprint of the current files
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

from grader.core.settings import exercises_root

REPO_ROOT = Path(__file__).resolve().parents[2]
# What the grading process imports (the import contract in tests/test_architecture.py keeps it so).
IMAGE_PACKAGES = ("grader/__init__.py", "grader/core", "grader/harness", "grader/learner", "grader/checks/__init__.py",
                  "grader/checks/learner", "grader/checks/grading", "grader/checks/referee", "grader/reference",
                  "sandbox/__init__.py", "sandbox/settings.py", "sandbox/forkserver.py", "sandbox/jail")


def image_files(course_root: Path | None = None) -> dict[str, Path]:
    """Path inside the build context -> file on this machine, for everything the image holds (the course
    at `course_root`, default the one DLA_EXERCISES names)."""
    files: dict[str, Path] = {"Dockerfile": REPO_ROOT / "sandbox" / "Dockerfile"}
    for name in IMAGE_PACKAGES:
        top = REPO_ROOT / name
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".ini"):
                files[path.relative_to(REPO_ROOT).as_posix()] = path
    course = course_root or exercises_root()
    for meta in sorted(course.rglob("exercise.yaml")):
        folder = meta.parent
        example = [folder / "example.py"] if (folder / "example.py").is_file() else []
        wanted = [meta, *example] + sorted(p for p in (folder / "checks").rglob("*")
                                 if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
        for path in wanted:
            files[f"exercises/{path.relative_to(course).as_posix()}"] = path
    library = course / "_library"  # the course's shared code, which checks import (courselib: import_checks)
    for path in sorted(library.rglob("*.py")) if library.is_dir() else []:
        if "__pycache__" not in path.parts:
            files[f"exercises/{path.relative_to(course).as_posix()}"] = path
    return files


def content_fingerprint(files: dict[str, Path] | None = None, course_root: Path | None = None) -> str:
    """A hash of every file name and content that goes into the image."""
    digest = hashlib.sha256()
    for name, path in sorted((files or image_files(course_root)).items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def write_context(dest: Path) -> str:
    """Copy the image's files into the (empty or missing) folder `dest`; returns their fingerprint."""
    files = image_files()
    for name, path in files.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return content_fingerprint(files)


def main(argv: list[str]) -> int:
    if argv[:1] == ["context"] and len(argv) == 2:
        print(write_context(Path(argv[1])))
        return 0
    if argv == ["fingerprint"]:
        print(content_fingerprint())
        return 0
    print(__doc__.split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
