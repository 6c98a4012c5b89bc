# pattern: the per-sample recipe of this course's card 06 and accumulate-amp's reference loop (each micro-batch's mean loss divided by its window's real size), the division Lightning's automatic optimization makes with accumulate_grad_batches (Lightning-AI/pytorch-lightning#19987 on its last window), applied to padded token batches
# class: mean-of-means
# expect: fail
# expect-fail: token-weighted
# why: dividing each micro-batch's mean by the window's real size is right for micro-batches of equal size, but here they hold 4-48 valid tokens, so each micro-batch counts the same whatever its tokens; the message must name the token weights and the window's valid tokens
import torch.nn.functional as F


def training_step(model, batch):
    tokens, labels = batch
    logits = model(tokens)
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


def train(model, optimizer, micro_batches, accum_steps):
    n = len(micro_batches)
    for batch_idx, batch in enumerate(micro_batches):
        window_start = batch_idx - batch_idx % accum_steps
        accumulated = min(accum_steps, n - window_start)
        loss = training_step(model, batch) / accumulated
        loss.backward()
        if (batch_idx + 1) % accum_steps == 0 or batch_idx + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
