"""Every integrity attack runs through both sandboxes, each with a warm pool (the web app's path)."""
import pytest


@pytest.fixture(scope="module", params=["local", "docker"])
def sandbox(request):
    from sandbox import SandboxError, get_sandbox

    try:
        made = get_sandbox(request.param, warm=1)
    except SandboxError as exc:
        pytest.skip(f"no {request.param} sandbox here: {exc}")
    yield made
    made.close()
