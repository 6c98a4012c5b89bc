"""The committed editor bundle is exactly what the lockfile and build script produce (no stale bundle)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.paths import REPO

FRONTEND = REPO / "platform" / "frontend"
BUNDLE = REPO / "platform" / "academy" / "static" / "editor.bundle.js"


@pytest.mark.slow
def test_committed_bundle_matches_a_fresh_build(tmp_path) -> None:  # noqa: ANN001
    npm = shutil.which("npm")
    assert npm, "npm is needed to rebuild the editor bundle: apt-get install -y nodejs npm"
    work = tmp_path / "frontend"
    shutil.copytree(FRONTEND, work, ignore=shutil.ignore_patterns("node_modules"))
    install = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=work, capture_output=True, text=True,
                             timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    out = tmp_path / "editor.bundle.js"
    build = subprocess.run(["node", "build.mjs"], cwd=work, capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/local/bin:/usr/bin:/bin", "OUTFILE": str(out)})
    assert build.returncode == 0, build.stderr[-2000:]
    assert out.read_bytes() == BUNDLE.read_bytes(), (
        "platform/academy/static/editor.bundle.js is stale: run `npm ci && npm run build` in platform/frontend "
        "and commit the result")
