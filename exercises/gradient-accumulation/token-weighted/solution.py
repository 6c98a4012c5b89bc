import torch
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    """Accumulate gradients over windows of `accum_steps` micro-batches, weighting every valid token alike."""
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]  # the last window may be shorter
        window_tokens = sum((labels != -100).sum() for _, labels in window)  # count before any backward
        for tokens, labels in window:
            logits = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
            (loss / window_tokens).backward()
        optimizer.step()
        optimizer.zero_grad()
