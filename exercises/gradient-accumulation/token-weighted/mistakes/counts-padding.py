# mistake: sums the loss but counts every position of the window, padding included (labels.numel()), so every token weighs too little
# expect-fail: token-weighted
# expect-skip: matches-reference-run
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        window_tokens = sum(labels.numel() for _, labels in window)
        for tokens, labels in window:
            logits = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
            (loss / window_tokens).backward()
        optimizer.step()
        optimizer.zero_grad()
