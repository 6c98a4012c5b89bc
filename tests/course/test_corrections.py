"""The corrections of issue 50, section 2, held where they can be checked mechanically: the behaviour a card or a
worked solution states, measured on this machine's torch, and the corrected sentence present (or the wrong one
absent) in the course text that states it."""
from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (torch's own spelling, as the course writes it)

COURSE = Path(__file__).resolve().parents[2] / "exercises"
MP, GA, PR, GM = (COURSE / name for name in ("mixed-precision", "gradient-accumulation", "profiling", "gpu-memory"))


def read(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text())  # sentences wrap differently in every file


def _overflowing_step(optimizer: torch.optim.Optimizer, model: torch.nn.Module, scaler: torch.amp.GradScaler):
    """One fp16 backward whose scaled gradients overflow at 2^24 (its loss is finite)."""
    with torch.autocast("cpu", dtype=torch.float16):
        loss = model(torch.full((2, 4), 1e4)).float().pow(2).mean()
    assert torch.isfinite(loss)
    scaler.scale(loss).backward()


# 1. skipped-steps/solution.md: a step post-hook fires on skipped steps of a fused optimizer.

@pytest.mark.parametrize("fused", [False, True])
def test_a_step_post_hook_fires_on_a_skipped_step_only_when_the_optimizer_is_fused(fused):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1, fused=fused)
    fired = []
    optimizer.register_step_post_hook(lambda *_: fired.append(True))
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24)
    before = model.weight.detach().clone()
    _overflowing_step(optimizer, model, scaler)
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**23 and torch.equal(model.weight, before)  # skipped: halved, unchanged
    assert bool(fired) is fused


def test_skipped_steps_solution_says_the_hook_fails_for_fused_optimizers():
    text = read(MP / "skipped-steps" / "solution.md")
    assert "which runs only when the optimizer really steps" not in text
    assert "the hook fires on skipped steps too" in text and "`fused=True`" in text
    assert "The scale test works for both." in text


# 2. Card 09c2: average_tokens_across_devices multiplies the loss by the number of processes.

def test_dividing_by_the_global_count_under_ddp_averaging_is_world_size_times_too_small():
    torch.manual_seed(0)
    sums = torch.rand(4) * 10  # four processes' summed token losses (their gradients, for a linear loss)
    counts = torch.tensor([7.0, 40.0, 12.0, 3.0])
    token_mean = sums.sum() / counts.sum()
    ddp_average = (sums / counts.sum()).mean()  # each divides by the global count; DDP's all-reduce averages
    assert torch.isclose(ddp_average * len(sums), token_mean)
    assert not torch.isclose(ddp_average, token_mean)
    card = read(GA / "cards" / "09c2-divide-by-the-windows-tokens.md")
    assert "multiplies the loss by the number of processes" in card and "`world_size` times too small" in card


# 3. ddp-clip / card 09d: after unscale_ and clipping, the step must still go through scaler.step.

def test_a_direct_step_after_unscale_and_clipping_writes_nan_and_nothing_raises():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24)
    _overflowing_step(optimizer, model, scaler)
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    optimizer.step()
    scaler.update()
    assert torch.isinf(norm) and torch.isnan(model.weight).all() and scaler.get_scale() == 2.0**23
    card = read(GA / "cards" / "09d-clip-once-per-window.md")
    assert "Why through `scaler.step`, and not `opt.step()`" in card and "writes NaN into the weights" in card


# 4-6, 9. The skip test is a convention; skips happen often, not always; a decaying schedule; forward overflow.

OWNED_TEXTS = [*COURSE.glob("*/cards/**/*.md"), *COURSE.glob("*/quiz*.yaml"), *COURSE.glob("*/*/solution.md"),
               *COURSE.glob("*/*/exercise.yaml"), COURSE.parent / "docs" / "course.md"]


def test_no_course_text_calls_the_skip_test_documented():
    said = [path for path in OWNED_TEXTS if "documented way" in read(path) or "documented `scaler" in read(path)]
    assert said == []
    assert "PyTorch documents no" in read(MP / "skipped-steps" / "solution.md")


@pytest.mark.parametrize("wrong", ["every fp16 run", "ogni addestramento fp16", "どのfp16学習でも",
                                   "كل تدريب fp16", "for nothing", "per niente", "学習率が無駄に", "بلا سبب"])
def test_skipped_first_steps_are_often_not_always_and_cost_only_on_a_decaying_schedule(wrong):
    texts = [*(MP / "cards").glob("**/09-update-the-scale-factor.md"), *MP.glob("quiz*.yaml")]
    assert [path.name for path in texts if wrong in read(path)] == []
    assert "on a decaying schedule" in read(MP / "quiz.yaml")


def test_a_float16_forward_overflow_is_skipped_at_any_scale():
    """A healthy run's falling scale can be an activation above 65504: inf before any scale applies."""
    model = torch.nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.fill_(1000.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1.0)  # no scaling at all
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(torch.full((1, 1), 100.0))
    assert torch.isinf(out).all()
    scaler.scale(out.float().pow(2).mean()).backward()  # the loss's gradient is inf: so are the weights'
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 0.5
    assert "in a healthy run, an activation overflows float16" in read(MP / "cards" / "09-update-the-scale-factor.md")
    assert "a float16 overflow in the forward pass itself" in read(MP / "skipped-steps" / "solution.md")


# 7-8. The EMA counts the unchanged weights twice; the starter's correct order still warns on a skipped first step.

def test_skipped_steps_solution_on_the_ema_and_the_scheduler_warning():
    text = read(MP / "skipped-steps" / "solution.md")
    assert "pulls the EMA back toward older weights" not in text
    assert "counts the same weights twice" in text
    assert "The starter's loop, whose order is right" in text


def test_a_scheduler_stepped_after_a_skipped_first_step_warns_of_the_wrong_order():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, 0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _overflowing_step(optimizer, model, scaler)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()  # after the step, as it should be: the step was skipped
    assert any("before `optimizer.step()`" in str(warning.message) for warning in caught)


# 10. Adam is roughly invariant to a global scale of the loss, not to reweighting; it changes the direction.

def test_adam_ignores_a_global_loss_scale_but_not_its_direction():
    def first_update(grad: torch.Tensor) -> torch.Tensor:
        weight = torch.zeros(3, requires_grad=True)
        optimizer = torch.optim.Adam([weight], lr=0.1, eps=1e-12)
        weight.grad = grad.clone()
        optimizer.step()
        return weight.detach()

    grad = torch.tensor([1.0, 0.01, -3.0])
    assert torch.allclose(first_update(grad), first_update(1000 * grad))
    cosine = F.cosine_similarity(first_update(grad), -grad, dim=0)
    assert cosine < 0.9  # the direction changed
    quiz = read(GA / "quiz.yaml")
    assert "rescales its size but not the direction" not in quiz and "which changes the direction too" in quiz


# 11. FSDP: FSDP1's own clipping method, FSDP2's DTensors, ShardedGradScaler.

def test_the_fsdp_names_the_card_gives_exist():
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    assert callable(FullyShardedDataParallel.clip_grad_norm_) and ShardedGradScaler
    card = read(GA / "cards" / "09e-clip-after-ddp-syncs.md")
    for said in ("`model.clip_grad_norm_(max_norm)`", "DTensors", "`ShardedGradScaler`"):
        assert said in card


# 12. torch._dynamo.explain returns an object and prints nothing.

def test_dynamo_explain_returns_an_object_and_prints_nothing():
    import torch._dynamo

    def branchy(x):
        if x.sum() > 0:  # a graph break: Python needs the tensor's truth value
            return x * 2
        return x

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        explanation = torch._dynamo.explain(branchy)(torch.ones(3))
    torch._dynamo.reset()
    assert printed.getvalue() == "" and explanation.graph_break_count >= 1
    assert "prints nothing itself" in read(PR / "cards" / "14-compiled-code-and-graph-breaks.md")


# 13. torch.where's gradient through the discarded branch.

def test_torch_where_gradient_is_nan_through_the_discarded_branch():
    x = torch.tensor([0.0, 2.0], requires_grad=True)
    torch.where(x > 0, torch.log(x), 0).sum().backward()
    assert torch.isnan(x.grad[0])
    x.grad = None
    torch.where(x > 0, torch.log(torch.where(x > 0, x, 1)), 0).sum().backward()
    assert torch.equal(x.grad, torch.tensor([0.0, 0.5]))
    card = read(PR / "cards" / "15-remove-a-graph-break.md")
    assert "its gradient flows only into the kept one" not in card and "has a NaN gradient at `x = 0`" in card
    assert "sends the gradient only into that side" not in read(PR / "quiz.yaml")


# 14-15. The DataLoader's own profiler row; per-op cost; non_blocking vs a side stream.

def test_the_profiler_already_has_a_dataloader_row():
    from torch.profiler import profile
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with profile() as prof:
        for (batch,) in loader:
            batch.sum()
    row = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert row in {event.key for event in prof.key_averages()}
    card = read(PR / "cards" / "16-a-step-that-waits-for-its-data.md")
    assert row in card and "about a microsecond" not in card and "a few microseconds" in card


def test_pinned_copies_do_not_overlap_compute_without_a_side_stream():
    card = read(PR / "cards" / "17-fetch-whole-batches.md")
    assert "lets the copy overlap the previous step" not in card and "`torch.cuda.Stream`" in card
    assert "lets them overlap with compute;" not in read(PR / "quiz.yaml")


# 16. A window with no valid token divides 0 by 0.

def test_a_window_without_valid_tokens_is_zero_over_zero():
    logits, labels = torch.randn(3, 5), torch.full((3,), -100)
    summed, count = F.cross_entropy(logits, labels, reduction="sum"), (labels != -100).sum()
    assert torch.isnan(summed / count) and (summed / count.clamp(min=1)) == 0
    assert "clamp(min=1)" in read(GA / "cards" / "09c2-divide-by-the-windows-tokens.md")
    assert "clamp(min=1)" in read(GA / "token-weighted" / "solution.md")


# gpu-memory card 05: summing every save overcounts by 67% to 89% on ReLU MLPs.

def _overcount(depth: int, width: int) -> float:
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    unique: dict[int, int] = {}
    total = 0

    def pack(tensor):
        nonlocal total
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            unique[storage.data_ptr()] = storage.nbytes()
            total += storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        F.cross_entropy(model(torch.randn(64, width)), torch.zeros(64, dtype=torch.long))
    return total / sum(unique.values()) - 1


def test_summing_every_save_overcounts_as_card_05_says():
    measured = [round(100 * _overcount(depth, width)) for depth, width in ((2, 256), (4, 512), (8, 1024))]
    assert measured == [67, 80, 89]
    card = read(GM / "cards" / "05-count-saved-activations.md")
    assert "70 to 90%" not in card and "67% to 89%" in card


# Arabic: one term for underflow and one for scaling, across every Arabic file of the course.

ARABIC = [*COURSE.glob("*/cards/ar/*.md"), *COURSE.glob("*/quiz.ar.yaml"), *COURSE.glob("**/*.ar.yaml")]


@pytest.mark.parametrize("wrong", ["تلاش", "تتلاشى", "يتلاشى", "تقييس", "مُقيِّس", "المقيس", "مُقيَّس", "قيِّس",
                                   "عامل التحجيم"])
def test_arabic_uses_one_term_for_underflow_and_for_scaling(wrong):
    # "عامل التحجيم" is checked without its "م": the term is "معامل التحجيم" everywhere.
    found = [path.name for path in ARABIC if re.search(rf"(?<!م){wrong}", path.read_text())]
    assert found == []


def test_arabic_names_underflow_with_the_english_word_beside_it():
    card = (MP / "cards" / "ar" / "03-the-catch-with-16-bit.md").read_text()
    assert "التدفق السفلي (underflow)" in card
    assert "معامل التحجيم" in (MP / "cards" / "ar" / "09-update-the-scale-factor.md").read_text()


def test_a_fused_adam_keeps_its_step_count_on_a_skipped_step():
    """Card 13: the fused kernel leaves state["step"] where it was on a skipped batch (it subtracts found_inf)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24)
    with torch.autocast("cpu", dtype=torch.float16):
        loss = model(torch.full((2, 4), 1e4)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**23
    assert [int(s["step"]) for s in optimizer.state.values()] == [0, 0]


def test_a_step_in_backward_through_one_scaler_ends_half_applied():
    """Card 14: per-parameter optimizers stepped from register_post_accumulate_grad_hook through one GradScaler:
    at 2^10 three of the four parameters update while one overflows, and the scale halves."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    per_param = {p: torch.optim.Adam([p], foreach=False) for p in model.parameters()}
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)

    def step_now(p):
        scaler.step(per_param[p])
        per_param[p].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(step_now)
    before = [p.detach().clone() for p in model.parameters()]
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(16, 4, generator=g) * 30, torch.randn(16, 2, generator=g)
    with torch.autocast("cpu", dtype=torch.float16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.update()
    assert scaler.get_scale() == 2.0**9
    assert [not torch.equal(b, p) for b, p in zip(before, model.parameters())] == [True, True, False, True]
