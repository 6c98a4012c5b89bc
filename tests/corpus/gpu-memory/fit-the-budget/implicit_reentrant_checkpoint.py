# pattern: pre-2.1 tutorials and model code calling torch.utils.checkpoint.checkpoint(block, h) without use_reentrant, which still means the reentrant variant (with the warning "the use_reentrant parameter should be passed explicitly"; with it, "None of the inputs have requires_grad=True. Gradients will be None")
# class: reentrant-no-grad
# expect: fail
# expect-fail: same-loss-and-grads
# why: the reentrant checkpoint of a block whose input does not require grad returns an output without a graph, so no block's weights get a gradient (only the head does); memory falls but the gradients are wrong; the message should name use_reentrant
import torch
import torch.utils.checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    h = x
    for block in model.blocks:
        h = torch.utils.checkpoint.checkpoint(block, h)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def evaluate(model, x):
    return model(x)
