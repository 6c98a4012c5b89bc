# pattern: karpathy/nanoGPT train.py (configure_optimizers picks AdamW(fused=True) when available; the learning rate follows get_lr(iter_num) with a linear warm-up, and iter_num += 1 every iteration after scaler.step(optimizer); scaler.update())
# class: warmup-by-iteration
# expect: fail
# expect-fail: warmup-on-real-steps, counts-real-steps
# why: the warm-up is indexed by iterations, so skipped updates advance it and iter_num counts them; DEBATABLE as a design (nanoGPT accepts it: a few skips at the start barely move a 2000-step warm-up), decided fail here since the task asks for the warm-up to follow real updates
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    iter_num = 0
    for X, Y in batches:
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(X)
            loss = loss_fn(logits, Y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        iter_num += 1
    return iter_num
