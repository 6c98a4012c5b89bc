# pattern: huggingface/transformers Trainer with bf16=True (training_step: with self.compute_loss_context_manager(): loss = self.compute_loss(model, inputs), the context being torch.autocast(device_type="cuda", dtype=torch.bfloat16); then loss.backward() outside it, optimizer.step(), model.zero_grad() after the step)
# class: bf16-trainer-style
# expect: pass
# why: forward and loss run under bfloat16 autocast through a context-manager factory, backward and step outside it, no GradScaler, the loss of each step returned as a float
import contextlib

import torch


def compute_loss_context_manager(bf16=True):
    if bf16:
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def compute_loss(model, loss_fn, inputs, labels):
    outputs = model(inputs)
    return loss_fn(outputs, labels)


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    model.zero_grad()
    for _ in range(steps):
        model.train()
        with compute_loss_context_manager():
            loss = compute_loss(model, loss_fn, x, y)
        loss.backward()
        optimizer.step()
        model.zero_grad()
        losses.append(loss.detach().item())
    return losses
