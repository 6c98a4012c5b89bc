import torch
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    """Accumulate gradients over windows of `accum_steps` micro-batches, weighting every valid token alike."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (tokens, labels) in enumerate(micro_batches):
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)  # this micro-batch's mean
        (loss / accum_steps).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
