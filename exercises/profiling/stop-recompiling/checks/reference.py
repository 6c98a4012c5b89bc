"""The grading side's run of the original compute_loss, in eager (grading process only: never imported by
probe.py, scenario.py or example.py, so the learner's process holds none of it)."""
import torch
import torch.nn.functional as F

import scenario


def original_compute_loss(model, tokens, smoothing):
    """The starter's compute_loss: what a correct one computes, whatever it compiles to."""
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    length = tokens.shape[1]
    mask = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
    logits = model.head(scores.masked_fill(mask, float("-inf")).softmax(-1) @ h)[:, :-1]
    return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), label_smoothing=smoothing)


def reference(seed: int, device: str) -> dict:
    """The original's run on the scenario's data: each step's loss and the weights after each step."""
    model, optimizer, batches = scenario.build(seed, device)
    weights: list = []
    losses = scenario.train(original_compute_loss, model, optimizer, batches, weights)
    return {"losses": losses, "weights": weights, "lengths": [int(b.shape[1]) for b in batches]}
