# pattern: the pre-2.4 API as found in countless public training scripts (e.g. the torch.cuda.amp examples of PyTorch 1.6-2.3): from torch.cuda.amp import autocast; with autocast(): ...; optimizer.zero_grad(set_to_none=True)
# class: correct-legacy-api
# expect: pass
# why: torch.cuda.amp.autocast() is the same fp16 CUDA autocast (deprecated name, same behaviour), emulated on CPU like torch.autocast('cuda'); the step is the documented one
import torch
from torch.cuda.amp import autocast


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad(set_to_none=True)
    with autocast():
        output = model(x)
        loss = loss_fn(output, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
