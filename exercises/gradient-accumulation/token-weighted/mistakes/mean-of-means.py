# mistake: divides each micro-batch's mean loss by its window's real size (right for equal micro-batches, as in accumulate-amp), so a micro-batch of 6 tokens counts as much as one of 44
# expect-fail: token-weighted
# expect-skip: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (tokens, labels) in enumerate(micro_batches):
        window_size = min(accum_steps, n - (i - i % accum_steps))
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        (loss / window_size).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
