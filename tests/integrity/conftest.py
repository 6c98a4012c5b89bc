"""Every integrity attack runs through both sandboxes, each with a warm pool (the web app's path)."""
import pytest


@pytest.fixture(scope="module", params=["local", "docker"])
def sandbox(request):
    from grader.host.sandboxes import get_sandbox
    from sandbox import SandboxError

    try:
        made = get_sandbox(request.param, warm=1)
    except SandboxError as exc:
        pytest.skip(f"no {request.param} sandbox here: {exc}")
    yield made
    made.close()
