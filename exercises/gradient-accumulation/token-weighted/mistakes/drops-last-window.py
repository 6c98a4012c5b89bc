# mistake: counts and steps only full windows (len(micro_batches) // accum_steps of them), so the short last window's 2 micro-batches never train the model
# expect-fail: steps-once-per-window
# expect-skip: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    optimizer.zero_grad()
    for w in range(len(micro_batches) // accum_steps):
        window = micro_batches[w * accum_steps:(w + 1) * accum_steps]
        window_tokens = sum((labels != -100).sum() for _, labels in window)
        for tokens, labels in window:
            logits = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
            (loss / window_tokens).backward()
        optimizer.step()
        optimizer.zero_grad()
