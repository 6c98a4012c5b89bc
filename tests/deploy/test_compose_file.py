"""The compose stack's trust boundary as docker-compose reads the file (`docker-compose config`, which
needs no engine): Redis demands a password and, with PostgreSQL, sits on a network only web and the
workers join."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from tests.support.paths import REPO


def _config(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("POSTGRES_PASSWORD", "REDIS_PASSWORD")}
    return subprocess.run(["docker-compose", "--profile", "cpu", "config"], cwd=REPO, env={**base, **env},
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def config() -> dict:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    done = _config(POSTGRES_PASSWORD="pg-secret", REDIS_PASSWORD="redis-secret")
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_redis_requires_a_password(config: dict) -> None:
    refused = _config(POSTGRES_PASSWORD="pg-secret")
    assert refused.returncode != 0 and "set REDIS_PASSWORD" in refused.stderr
    for name in ("web", "worker", "worker-cpu"):
        assert config["services"][name]["environment"]["REDIS_URL"] == "redis://:redis-secret@redis:6379/0", name
    assert config["services"]["redis"]["environment"]["REDIS_PASSWORD"] == "redis-secret"
    dockerfile = (REPO / "deploy/redis/Dockerfile").read_text()
    assert '--requirepass \\"$REDIS_PASSWORD\\"' in dockerfile and "set REDIS_PASSWORD" in dockerfile
    assert "REDISCLI_AUTH" in " ".join(config["services"]["redis"]["healthcheck"]["test"])


def test_only_web_and_workers_reach_redis_and_postgres(config: dict) -> None:
    services = config["services"]
    backend = [network for network in config["networks"] if network.endswith("backend")]
    assert len(backend) == 1 and config["networks"][backend[0]].get("internal") is True
    on_backend = {name for name, service in services.items() if backend[0] in (service.get("networks") or {})}
    assert on_backend == {"web", "worker", "worker-cpu", "redis", "postgres"}
    for name in ("redis", "postgres", "worker", "worker-cpu"):
        assert set(services[name]["networks"]) == {backend[0]}, name
        assert not services[name].get("ports"), name


def test_web_serves_with_the_server_that_slow_clients_cannot_stall(config: dict) -> None:
    """web's entrypoint runs academy/serve.py (tests/deploy/test_slow_clients.py attacks it) with the settings
    compose passes, and compose waits for its graceful stop before it kills it."""
    web = config["services"]["web"]
    entrypoint = (REPO / "deploy/app/entrypoint").read_text()
    serving = entrypoint.split("python -m academy.serve", 1)[1].split(";;", 1)[0]
    assert "gunicorn" not in entrypoint.split("web)", 1)[1].split(";;", 1)[0]
    for name, flag in [("DLA_WEB_WORKERS", "--processes"), ("DLA_WEB_THREADS", "--threads"),
                       ("DLA_WEB_REQUEST_TIMEOUT", "--request-timeout"), ("DLA_WEB_IDLE_TIMEOUT", "--idle-timeout"),
                       ("DLA_WEB_CONNECTIONS", "--connections"), ("DLA_WEB_GRACEFUL_TIMEOUT", "--graceful-timeout")]:
        assert f'{flag} "${{{name}:-' in serving, name
        assert int(web["environment"][name]) > 0, name
    grace = web["stop_grace_period"]
    seconds = int(grace[:-1]) * (60 if grace.endswith("m") else 1)
    assert seconds > int(web["environment"]["DLA_WEB_GRACEFUL_TIMEOUT"]), grace
    assert "waitress" in (REPO / "deploy/app/Dockerfile").read_text()
