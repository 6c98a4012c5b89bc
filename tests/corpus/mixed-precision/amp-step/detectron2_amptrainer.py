# pattern: detectron2, detectron2/engine/train_loop.py AMPTrainer.run_step: a dict of losses summed under autocast, optimizer.zero_grad() after the forward pass, grad_scaler.scale(losses).backward(), grad_scaler.step, grad_scaler.update
# class: correct-detectron2
# expect: pass
# why: zero_grad between forward and backward is still before backward; the summed loss dict is the loss (0 + loss), scaled before backward; the step goes through the caller's scaler
import torch
from torch.amp import autocast


def train_step(model, optimizer, scaler, loss_fn, x, y):
    assert model.training, "AMP training step called on a model in eval mode"

    with autocast("cuda", dtype=torch.float16):
        loss_dict = {"loss_cls": loss_fn(model(x), y)}
        # a model may hand back one tensor or a dict of named losses; the total is their sum
        losses = loss_dict if isinstance(loss_dict, torch.Tensor) else sum(loss_dict.values())

    optimizer.zero_grad()
    scaler.scale(losses).backward()

    scaler.step(optimizer)
    scaler.update()
    return losses
