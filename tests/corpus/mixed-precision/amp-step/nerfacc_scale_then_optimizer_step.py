# pattern: nerfstudio-project/nerfacc examples/train_ngp_nerf_prop.py as discussed in nerfacc#307 ("the sample code uses the GradScaler, but only for scaling the loss and not for the update step"): grad_scaler.scale(loss).backward(); optimizer.step(), no scaler.step, no scaler.update
# class: nan-from-earlier-call
# expect: fail
# expect-fail: step-update-order
# why: call 1 steps with gradients 65536 times too large (optimizer.step called directly), the weights blow up, and from call 2 the fp16 forward overflows and train_step returns NaN; the returned NaN IS the loss at those weights, so runs must not blame the return statement: the cause is call 1's direct optimizer.step without scaler.step/update (step-update-order) and the weights that differ from call 1 on (matches-reference)
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    grad_scaler = scaler
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        rgb = model(x)
        loss = loss_fn(rgb, y)
    # the example steps the optimizer itself: the scaler only multiplies the loss
    grad_scaler.scale(loss).backward()
    optimizer.step()
    return loss
