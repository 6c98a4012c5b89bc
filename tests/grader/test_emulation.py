"""The CUDA emulation keeps PyTorch's deprecation warnings (issue 19, item 3): a learner who writes the
legacy `torch.cuda.amp.GradScaler()` or `torch.cuda.amp.autocast()` sees PyTorch's FutureWarning naming
the current API, emulated on a CPU as on a GPU.

The emulation patches torch globally, so it runs in a child interpreter.
"""
import json
import subprocess
import sys
import textwrap

import pytest

SOURCE = """
import json, warnings
import torch
from grader.learner import amp
from grader.learner.emulation import install_cuda_emulation
if {recording}:
    amp.install()
else:
    install_cuda_emulation()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast():
        pass
    modern = torch.amp.GradScaler("cuda")
print(json.dumps({{"warnings": [[w.category.__name__, str(w.message), w.filename] for w in caught],
                   "enabled": scaler.is_enabled(), "modern_enabled": modern.is_enabled()}}))
"""


@pytest.mark.parametrize("recording", [False, True], ids=["plain", "recording-scaler"])
def test_legacy_amp_names_warn_as_pytorch_does(recording):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SOURCE.format(recording=recording))],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert result["enabled"] and result["modern_enabled"]
    future = [(message, filename) for category, message, filename in result["warnings"]
              if category == "FutureWarning"]
    messages = [message for message, _ in future]
    assert any("torch.cuda.amp.GradScaler(args...)` is deprecated" in m and "torch.amp.GradScaler('cuda'" in m
               for m in messages), result
    assert any("torch.cuda.amp.autocast(args...)` is deprecated" in m for m in messages), result
    # The warning points at the caller's line, not at the emulation.
    assert all(not filename.endswith("emulation.py") for _, filename in future), future
    # The current name gives no deprecation warning.
    assert len(future) == 2, future
