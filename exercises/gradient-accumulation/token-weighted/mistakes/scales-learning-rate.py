# mistake: normalises by the window's tokens correctly but also multiplies the learning rate by accum_steps (the linear scaling rule for a larger batch), though each update already uses the window's token mean: every update 3x too large
# expect-fail: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    for group in optimizer.param_groups:
        group["lr"] *= accum_steps
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        window_tokens = sum((labels != -100).sum() for _, labels in window)
        for tokens, labels in window:
            logits = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
            (loss / window_tokens).backward()
        optimizer.step()
        optimizer.zero_grad()
