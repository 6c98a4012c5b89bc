# mistake: counts the window's tokens right but never clears the gradients, so every update adds the previous windows' gradients to its own
# expect-fail: gradient-of-its-window
# expect-skip: token-weighted, matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        window_tokens = sum((labels != -100).sum() for _, labels in window)
        for tokens, labels in window:
            logits = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
            (loss / window_tokens).backward()
        optimizer.step()
