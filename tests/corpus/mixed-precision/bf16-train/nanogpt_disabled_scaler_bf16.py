# pattern: karpathy/nanoGPT train.py with dtype = 'bfloat16': ptdtype from a dict, ctx = torch.amp.autocast(device_type=device_type, dtype=ptdtype), scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16')) (so disabled), scaler.scale(loss).backward(), scaler.step(optimizer), scaler.update(), optimizer.zero_grad(set_to_none=True) after the step
# class: bf16-disabled-scaler
# expect: pass
# why: bfloat16 autocast around forward and loss, backward outside; the scaler is created disabled, so scale() returns the loss itself and step() is a plain optimizer.step(): nothing is scaled, and the run learns like fp32
import torch

dtype = 'bfloat16'
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]


def train(model, optimizer, loss_fn, x, y, steps):
    ctx = torch.amp.autocast(device_type='cuda', dtype=ptdtype)
    scaler = torch.amp.GradScaler('cuda', enabled=(dtype == 'float16'))
    losses = []
    for _ in range(steps):
        with ctx:
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses
