"""What a correct fsdp2-accumulate run ends with: the grading process only (never imported by the probe or
the scenario, so never in the learner's processes)."""
import functools

import torch

import scenario


@functools.lru_cache(maxsize=4)  # the checks and the figure ask for the same run
def reference(seed: int) -> dict:
    """One process, no FSDP, as FSDP2 under MixedPrecisionPolicy(bfloat16, float32) computes: each micro-batch's
    forward and backward on a bfloat16 copy of the weights and inputs, its gradient added up in float32, each
    window's sum averaged over the two ranks, clipped to MAX_NORM at its global norm and stepped (SGD with
    momentum, float32 weights). Per window: the weights after it and its gradient norm before and after
    clipping."""
    model = scenario.build_model(seed)
    optimizer = scenario.make_optimizer(model.parameters())
    shares = [scenario.micro_batches(seed, rank) for rank in range(scenario.WORLD)]
    weights, before, after = [], [], []
    for window in scenario.windows():
        total = [torch.zeros_like(p) for p in model.parameters()]
        for i in window:
            for rank in range(scenario.WORLD):
                x, y = shares[rank][i]
                low = [p.detach().to(torch.bfloat16).requires_grad_() for p in model.parameters()]
                logits = torch.func.functional_call(model, dict(zip(dict(model.named_parameters()), low)),
                                                    (x.to(torch.bfloat16),))
                (scenario.loss_fn(logits, y) / len(window)).backward()
                for t, p in zip(total, low):
                    t.add_(p.grad.float())
        for p, t in zip(model.parameters(), total):
            p.grad = t / scenario.WORLD
        before.append(_norm(model))
        torch.nn.utils.clip_grad_norm_(model.parameters(), scenario.MAX_NORM)
        after.append(_norm(model))
        optimizer.step()
        optimizer.zero_grad()
        weights.append(scenario.params(model))
    return {"weights": weights, "norm_before": before, "norm_after": after}


def _norm(model: torch.nn.Module) -> float:
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in model.parameters()])))
