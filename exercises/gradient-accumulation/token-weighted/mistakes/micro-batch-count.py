# mistake: divides each micro-batch's summed loss by its own valid tokens, not the window's: each micro-batch's mean, added up over the window
# expect-fail: token-weighted
# expect-skip: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (tokens, labels) in enumerate(micro_batches):
        num_tokens = (labels != -100).sum()
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
        (loss / num_tokens).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
