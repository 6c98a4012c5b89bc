# mistake: divides by the average window's valid tokens (the run's tokens over the number of windows), as if every window held as many; the short last window holds about two thirds of that
# expect-fail: token-weighted
# expect-skip: matches-reference-run
import math

import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    n = len(micro_batches)
    tokens_per_window = sum((labels != -100).sum() for _, labels in micro_batches) / math.ceil(n / accum_steps)
    optimizer.zero_grad()
    for i, (tokens, labels) in enumerate(micro_batches):
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
        (loss / tokens_per_window).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
