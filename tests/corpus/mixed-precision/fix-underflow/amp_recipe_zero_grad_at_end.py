# pattern: PyTorch tutorials, recipes/recipes/amp_recipe.py "All together": use_amp flag, scaler = torch.amp.GradScaler("cuda", enabled=use_amp) before the loop, autocast(enabled=use_amp), scale/backward, step, update, then opt.zero_grad(set_to_none=True) at the end of each iteration
# class: zero-grad-at-end
# expect: pass
# why: DEBATABLE, decided pass: PyTorch's own recipe order; the model arrives without gradients and zero_grad runs after every step, so no backward ever adds to old gradients
import torch

use_amp = True
device = "cuda"


def train(model, optimizer, loss_fn, x, y, steps):
    net, opt = model, optimizer
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    losses = []
    for epoch in range(steps):
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
            output = net(x)
            loss = loss_fn(output, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)  # at the end, as in the recipe; set_to_none saves a memset
        losses.append(loss.item())
    return losses
