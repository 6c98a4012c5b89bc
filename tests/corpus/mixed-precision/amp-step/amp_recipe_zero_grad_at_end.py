# pattern: PyTorch tutorials, recipes/recipes/amp_recipe.py "All together: Automatic Mixed Precision": use_amp flag, autocast(enabled=use_amp), scaler.scale(loss).backward(), scaler.step(opt), scaler.update(), then opt.zero_grad(set_to_none=True) at the END of the iteration
# class: zero-grad-at-end
# expect: fail
# expect-fail: grads-cleared
# why: DEBATABLE, decided fail (docs/course.md): the exercise hands train_step gradients left over from before (as a real caller may), and a function that is one step must clear them before backward; the message names the end-of-step zero_grad, the official recipe's loop order, as the reason
import torch

use_amp = True
device = 'cuda'


def train_step(model, optimizer, scaler, loss_fn, x, y):
    with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
        output = model(x)
        loss = loss_fn(output, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)  # at the end, as in the recipe; set_to_none saves a memset
    return loss
