"""Hosts where the local sandbox cannot confine, made for real with Docker (never by changing this
host's sysctls): there it is refused with what is missing, before a submission is taken.

* no user namespaces: an unprivileged user in a container whose seccomp profile (Docker's default)
  denies unshare, as on distributions that disable unprivileged user namespaces;
* an unprivileged container like the compose worker: root inside, Docker's default capabilities and
  seccomp profile, no cgroup to write to.

The compose worker itself refusing DLA_SANDBOX=local is in tests/deploy/test_compose.py."""
import json
import subprocess

import pytest

pytestmark = pytest.mark.docker


def preflight(image: str, *flags: str) -> dict:
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", *flags, "--entrypoint", "python", image,
                           "-m", "grader.harness", "--preflight"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_without_user_namespaces_the_local_sandbox_is_refused(docker_image):
    answer = preflight(docker_image, "--user", "65534")
    assert answer["ok"] is False
    assert any(p.startswith("no namespaces: unshare: Operation not permitted") for p in answer["problems"]), answer


def test_in_an_unprivileged_container_the_local_sandbox_is_refused(docker_image):
    answer = preflight(docker_image, "--user", "0")
    assert answer["ok"] is False
    assert any(p.startswith("no cgroup for submissions") for p in answer["problems"]), answer
    assert any(p.startswith("no namespaces") for p in answer["problems"]), answer


def test_the_same_check_passes_where_the_sandbox_can_confine(docker_image):
    # Control: the check is not simply always negative (this host, as root, confines).
    import os
    import sys

    from tests.support.paths import REPO

    if os.geteuid() != 0:
        pytest.skip("this host confines as root (CI runs as root)")
    proc = subprocess.run([sys.executable, "-m", "grader.harness", "--preflight"], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert json.loads(proc.stdout) == {"ok": True, "problems": []}
