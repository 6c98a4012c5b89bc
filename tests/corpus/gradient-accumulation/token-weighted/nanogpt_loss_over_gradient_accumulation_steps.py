# pattern: karpathy/nanoGPT train.py: for micro_step in range(gradient_accumulation_steps): logits, loss = model(X, Y); loss = loss / gradient_accumulation_steps  # scale the loss to account for gradient accumulation; scaler.scale(loss).backward(); then optimizer step and optimizer.zero_grad(set_to_none=True); the model's loss is F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1) (here -100), right for nanoGPT's unpadded blocks of equal length
# class: divide-mean-by-accum-steps
# expect: fail
# expect-fail: token-weighted
# why: with padded micro-batches of 4-48 valid tokens the mean of micro-batch means is not the window's token mean, and the short last window is divided by 3 too; the message must say each micro-batch counted the same whatever its tokens
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    gradient_accumulation_steps = accum_steps
    batches = iter(micro_batches)
    remaining = len(micro_batches)
    while remaining > 0:
        for micro_step in range(min(gradient_accumulation_steps, remaining)):
            X, Y = next(batches)
            logits = model(X)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.view(-1), ignore_index=-100)
            loss = loss / gradient_accumulation_steps  # scale the loss to account for gradient accumulation
            loss.backward()
        remaining -= gradient_accumulation_steps
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
