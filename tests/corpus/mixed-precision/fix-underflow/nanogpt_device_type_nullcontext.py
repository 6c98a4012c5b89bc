# pattern: karpathy/nanoGPT train.py device handling: device_type = 'cuda' if 'cuda' in device else 'cpu'; ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype); here the device is read from the input tensor
# class: device-from-input
# expect: fail
# expect-fail: autocast-scope
# why: DEBATABLE, decided fail: on a CUDA host this code runs fp16 autocast and would pass, but the grader has no GPU and hands it CPU tensors, so the code itself chooses nullcontext and trains in float32; the grader cannot check AMP code that never ran, and passing it would let any AMP exercise be passed by an fp32 branch; the message must say that the code switched autocast off because the input is on the CPU (CUDA is emulated here) and to use device_type='cuda' as the lesson does, not "wrap model(x) in autocast"; scaled-backward and step-update-order pass (nanoGPT's scaler is enabled and used) and fp32 training does reach the fp32 loss
from contextlib import nullcontext

import torch

dtype = 'float16'
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]


def train(model, optimizer, loss_fn, x, y, steps):
    device = str(x.device)
    device_type = 'cuda' if 'cuda' in device else 'cpu'  # nanoGPT derives this from its --device string
    ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
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
