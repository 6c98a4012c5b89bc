# pattern: torch.utils.checkpoint.checkpoint_sequential with about sqrt(n) segments, the classic memory/compute trade-off (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"; the docs example passes `chunks` segments): 2 segments for 6 blocks, use_reentrant=False, evaluation under torch.no_grad()
# class: checkpoint-sequential-few-segments
# expect: pass
# why: DEBATABLE, decided pass: checkpoint_sequential checkpoints the first 3 blocks as one segment and runs the last 3 normally, a textbook trade-off (issue 19); measured at 60.7-60.8% of the original step's memory on CPU, which failed the old 60% budget; the budget is set above every checkpoint_sequential variant (docs/course.md)
import torch
from torch.utils.checkpoint import checkpoint_sequential


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad(set_to_none=True)
    h = checkpoint_sequential(model.blocks, 2, x, use_reentrant=False)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def evaluate(model, x):
    model.eval()
    return model(x)
