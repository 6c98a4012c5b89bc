# pattern: the loop of huggingface/accelerate#641 (optimizer.zero_grad() at the top of every iteration inside accelerator.accumulate, harmless there only because the prepared optimizer's zero_grad is a no-op between sync steps) rewritten with a plain optimizer and GradScaler: every micro-batch starts by clearing the gradients
# class: zero-grad-every-micro-batch
# expect: fail
# expect-fail: grads-cleared-per-window
# why: zero_grad before every micro-batch throws away the window's earlier micro-batches, so each update sees only the last micro-batch's gradient divided by the window size; the message must name the zero_grad call inside the window
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    for step, batch in enumerate(micro_batches):
        optimizer.zero_grad()
        inputs, labels = batch
        size = min(accum_steps, n - step // accum_steps * accum_steps)
        with torch.autocast('cuda', dtype=torch.float16):
            loss = loss_fn(model(inputs), labels) / size
        scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0 or step + 1 == n:
            scaler.step(optimizer)
            scaler.update()
