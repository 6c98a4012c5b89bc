# pattern: torch.utils.checkpoint.checkpoint_sequential(functions, segments, input, use_reentrant=False) with a segment count that does not divide the blocks (docs example: input_var = checkpoint_sequential(model, chunks, input_var)): 4 segments for 6 blocks, evaluation under torch.inference_mode()
# class: checkpoint-sequential-uneven-segments
# expect: pass
# why: DEBATABLE, decided pass: with 6 // 4 = 1 block per segment, checkpoint_sequential checkpoints blocks 1-3 one by one and runs its last segment, blocks 4-6, normally; the loss and gradients are the original's and the memory, 68.5% of the original step's on CPU (the largest of the measured expert variants), is inside the budget set from them with its margin (docs/course.md)
import torch
from torch.utils.checkpoint import checkpoint_sequential


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    h = checkpoint_sequential(model.blocks, 4, x, use_reentrant=False)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    model.eval()
    with torch.inference_mode():
        return model(x)
