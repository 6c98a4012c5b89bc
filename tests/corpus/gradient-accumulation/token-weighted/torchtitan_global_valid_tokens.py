# pattern: pytorch/torchtitan's trainer (torchtitan/train.py, later torchtitan/trainer.py) with gradient accumulation: the step counts the valid tokens of all its microbatches first (local_valid_tokens = (labels != IGNORE_INDEX).sum() summed over them, all-reduced into global_valid_tokens), and forward_backward_step divides each microbatch's summed cross-entropy by global_valid_tokens before backward (the loss is local_loss_sum / global_valid_tokens, so FSDP's own gradient division is disabled)
# class: count-window-tokens-first
# expect: pass
# why: each microbatch's summed loss is divided by the valid tokens of its whole step (window), the short last one counted on its own, so every update is the window's token mean
import torch
import torch.nn.functional as F

IGNORE_INDEX = -100


def cross_entropy_loss(pred, labels):
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1), reduction="sum", ignore_index=IGNORE_INDEX)


def forward_backward_step(model, inputs, labels, global_valid_tokens):
    pred = model(inputs)
    loss = cross_entropy_loss(pred, labels) / global_valid_tokens
    del pred
    loss.backward()
    return loss.detach()


def train(model, optimizer, micro_batches, accum_steps):
    for start in range(0, len(micro_batches), accum_steps):
        microbatches = micro_batches[start:start + accum_steps]
        local_valid_tokens = torch.tensor(0, dtype=torch.int64)
        for _, labels in microbatches:
            local_valid_tokens += (labels != IGNORE_INDEX).sum().cpu()
        global_valid_tokens = local_valid_tokens.float()  # one process: the all-reduce is the identity
        optimizer.zero_grad()
        for inputs, labels in microbatches:
            forward_backward_step(model, inputs, labels, global_valid_tokens.to(labels.device))
        optimizer.step()
