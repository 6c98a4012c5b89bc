"""Every integrity attack runs through both sandboxes, each with a warm pool (the web app's path), shared
by the whole session."""
import pytest


@pytest.fixture(scope="module", params=["local", "docker"])
def sandbox(request, warm_sandbox):
    return warm_sandbox(request.param)
