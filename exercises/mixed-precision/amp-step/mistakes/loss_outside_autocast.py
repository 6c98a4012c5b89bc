# mistake: only the model runs under autocast; the loss is computed after the block, in fp16 outputs' precision
# expect-fail: autocast-scope
# expect-skip: matches-reference
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.cuda.amp.autocast():
        out = model(x)
    loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss
