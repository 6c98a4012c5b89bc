# pattern: NVIDIA/Megatron-LM with --calculate-per-token-loss: pretrain_gpt.py loss_func returns (loss_mask-weighted sum of the losses, num_tokens = loss_mask.sum()), megatron/core/pipeline_parallel/schedules.py forward_step backpropagates each microbatch's sum and adds its num_tokens to total_num_tokens, and finalize_model_grads(..., num_tokens=total_num_tokens) scales the gradients by 1.0 / num_tokens before the optimizer step
# class: normalize-after-window
# expect: pass
# why: the sums are backpropagated as they are and the window's gradient is scaled by 1 / (the window's valid tokens, the loss mask's sum) before the step: the token mean exactly
import torch
import torch.nn.functional as F


def loss_func(loss_mask, output_tensor, labels):
    losses = F.cross_entropy(output_tensor.flatten(0, 1), labels.flatten().clamp(min=0), reduction="none")
    loss_mask = loss_mask.view(-1).float()
    loss = torch.sum(losses * loss_mask)
    num_tokens = loss_mask.sum().clone().detach().to(torch.int)
    return loss, num_tokens


def finalize_model_grads(model, num_tokens):
    scaling = 1.0 / num_tokens
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(scaling)


def train(model, optimizer, micro_batches, accum_steps):
    for start in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        total_num_tokens = torch.zeros([], dtype=torch.int)
        for tokens, labels in micro_batches[start:start + accum_steps]:
            loss_mask = labels != -100
            loss, num_tokens = loss_func(loss_mask, model(tokens), labels)
            loss.backward()
            total_num_tokens += num_tokens.cpu()
        finalize_model_grads(model, total_num_tokens.item())
        optimizer.step()
