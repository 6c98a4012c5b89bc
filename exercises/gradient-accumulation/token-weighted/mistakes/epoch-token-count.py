# mistake: divides by the valid tokens of the whole run (all 8 micro-batches), counted once before the loop, not by each window's
# expect-fail: token-weighted
# expect-skip: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    total_tokens = sum((labels != -100).sum() for _, labels in micro_batches)
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (tokens, labels) in enumerate(micro_batches):
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
        (loss / total_tokens).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
