# mistake: counts the tokens of the accum_steps micro-batches starting at the current one (micro_batches[i:i + accum_steps]), not of the window it belongs to: a window's later micro-batches are divided by counts that reach into the next window
# expect-fail: token-weighted
# expect-skip: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (tokens, labels) in enumerate(micro_batches):
        window_tokens = sum((lab != -100).sum() for _, lab in micro_batches[i:i + accum_steps])
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
        (loss / window_tokens).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
