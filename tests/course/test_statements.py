"""What the course tells a learner to write, held against PyTorch itself: the code a card or prompt gives
is run, and its answer compared with the truth (issue 29, item 1)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import re
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from grader.core.course import load_course
from grader.learner.memory import SavedTensorMeter
from tests.support.paths import EXERCISES


@pytest.fixture(scope="module")
def course():
    return load_course()


def _simulate_gpu(monkeypatch: pytest.MonkeyPatch, major: int) -> None:
    """torch.cuda as it answers on a GPU of compute capability (major, 0) on which a bfloat16 tensor can be
    made: a V100 (7) emulates bfloat16, an A100 (8) has it natively."""
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: SimpleNamespace(major=major, minor=0))
    monkeypatch.setattr(torch.cuda, "_check_bf16_tensor_supported", lambda device: True)


def test_the_bf16_prompt_names_a_check_that_says_no_on_emulating_gpus(course, monkeypatch):
    """Every support check the bf16-train prompt gives as code answers False on a V100 and True on an A100;
    the bare `is_bf16_supported()` would answer True on both."""
    prompt = course.exercises["mixed-precision/bf16-train"].prompt
    checks = [code for code in re.findall(r"`(torch\.cuda\.[^`\n]+)`", prompt)
              if "is_bf16_supported(" in code or "get_device_capability(" in code]
    assert checks, "the prompt names no bfloat16 support check"
    for major, native in ((7, False), (8, True), (9, True)):
        _simulate_gpu(monkeypatch, major)
        for code in checks:
            assert bool(eval(code, {"torch": torch})) is native, (code, major)  # the prompt's own code
        assert torch.cuda.is_bf16_supported() is True  # what the prompt says the bare call answers


def _card_code(course, lesson_id: str, card_id: str) -> str:
    markdown = course.lesson(lesson_id).step(card_id).markdown
    return markdown.split("```python\n", 1)[1].split("```", 1)[0]


def _relu_mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def test_the_saved_tensor_snippet_counts_each_storage_once(course):
    """gpu-memory's card 05, run on a ReLU MLP (whose ReLU outputs are saved twice: by the ReLU and by the next
    Linear), prints what the grader's own meter counts: each storage once, weights left out."""
    torch.manual_seed(0)
    model, x, y = _relu_mlp(), torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss_fn = nn.functional.cross_entropy
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(_card_code(course, "gpu-memory", "count-saved-activations"),  # the card's own code
             {"torch": torch, "model": model, "loss_fn": loss_fn, "x": x, "y": y})
    card_mb = float(printed.getvalue().split()[0])
    with SavedTensorMeter(exclude=model.parameters()) as meter:
        loss_fn(model(x), y)
    assert meter.count > len(meter._storages)  # the scenario does save a tensor twice
    assert card_mb == meter.bytes / 2**20


def _fit_the_budget_solution():
    path = EXERCISES / "gpu-memory" / "fit-the-budget" / "solution.py"
    spec = importlib.util.spec_from_file_location("fit_the_budget_solution", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fit_the_budget_evaluate_leaves_the_callers_mode_as_it_was():
    """A training loop that evaluates now and then goes on training (dropout on); an evaluating caller stays
    in eval mode; and the outputs are the eval-mode ones either way."""
    evaluate = _fit_the_budget_solution().evaluate
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)), torch.randn(4, 8)
    expected = model.eval()(x).detach()
    for training in (True, False):
        model.train(training)
        assert torch.equal(evaluate(model, x), expected)
        assert model.training is training and model[1].training is training


def test_fit_the_budget_evaluate_restores_the_mode_when_the_forward_fails():
    class Broken(nn.Module):
        def forward(self, x):
            raise RuntimeError("out of memory")

    model = Broken().train()
    with pytest.raises(RuntimeError):
        _fit_the_budget_solution().evaluate(model, torch.randn(2))
    assert model.training
