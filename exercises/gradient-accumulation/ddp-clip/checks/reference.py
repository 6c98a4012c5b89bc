"""What a correct ddp-clip run ends with: the grading process only (never imported by the probe, the
scenario or the grader's rank, so never in the learner's process)."""
import functools

import torch

import scenario


@functools.lru_cache(maxsize=4)  # the checks and the figure ask for the same run
def reference(seed: int, other_seed: int, spike: int) -> dict:
    """One process, no DDP: each window's mean gradient over both ranks' micro-batches, multiplied by the
    loss scale as a GradScaler does; a window whose scaled gradient is not finite is skipped and the scale
    halved (GradScaler's backoff), any other is unscaled, clipped to MAX_NORM at its global norm, and stepped
    (SGD with momentum). Per window: the weights after it, its gradient norm before and after clipping (None
    where it was skipped), and the scale after its update."""
    model, optimizer, loss_fn = scenario.build_model(seed)
    shares = {scenario.GRADER_RANK: scenario.micro_batches(other_seed, spike),
              scenario.LEARNER_RANK: scenario.micro_batches(seed)}
    weights, before, after, scales, scale = [], [], [], [], scenario.INIT_SCALE
    optimizer.zero_grad()
    for window in scenario.windows():
        for i in window:
            for rank in range(scenario.WORLD):
                x, y = shares[rank][i]
                (loss_fn(model(x), y) / len(window) / scenario.WORLD * scale).backward()
        if all(bool(torch.isfinite(p.grad).all()) for p in model.parameters()):
            for p in model.parameters():
                p.grad.div_(scale)  # a power of two: exact
            before.append(scenario.grad_norm(model))
            torch.nn.utils.clip_grad_norm_(model.parameters(), scenario.MAX_NORM)
            after.append(scenario.grad_norm(model))
            optimizer.step()
        else:
            before.append(None)
            after.append(None)
            scale /= 2
        optimizer.zero_grad()
        weights.append(scenario.params(model))
        scales.append(scale)
    return {"weights": weights, "norm_before": before, "norm_after": after, "scales": scales}
