"""The amp-clip-step task: amp-step's, with a clipping threshold; built identically in the learner's
process (probe) and the grader's (checks)."""
import torch
from torch import nn

CALLS = 3  # ordinary steps; one more call then feeds a batch whose fp16 loss overflows
LR, MOMENTUM = 0.05, 0.9
# The scenario's gradient norms are 0.29-0.45 (seeds 0-4, measured): a threshold of 0.1 clips every
# ordinary step, so a step that does not clip (or clips scaled gradients) moves the weights differently.
MAX_NORM = 0.1
# The last call (index CALLS + 1) starts the optimizer afresh and uses a loss a millionth of the usual
# size, with the learning rate raised to match: its float16 gradients (~4e-9 at the logits) underflow
# to zero unless the loss is scaled first, so a raw backward leaves the weights where they were while a
# correct step moves them by a normal step's amount.
UNDERFLOW_LOSS_SCALE = 1e-6
UNDERFLOW_CALL = CALLS + 1


def build(seed: int, device: str):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    g = torch.Generator().manual_seed(seed + 1)
    batches = [(torch.randn(64, 16, generator=g).to(device), torch.randint(0, 4, (64,), generator=g).to(device))
               for _ in range(CALLS)]
    # Inputs of 1e6 overflow fp16 (max 65504) in the first Linear: the loss and gradients become inf/NaN.
    batches.append((torch.full((64, 16), 1e6).to(device), batches[0][1]))
    stale = [torch.randn(p.shape, generator=g).to(device) for p in model.parameters()]
    return model, optimizer, nn.CrossEntropyLoss(), batches, stale


def tiny(loss_fn):
    def tiny_loss(output, target):
        return UNDERFLOW_LOSS_SCALE * loss_fn(output, target)

    return tiny_loss


def start_underflow_call(optimizer):
    """Fresh momentum (the update is then the gradient alone) and a learning rate to match the loss."""
    optimizer.state.clear()
    for group in optimizer.param_groups:
        group["lr"] = LR / UNDERFLOW_LOSS_SCALE


def params(model):
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}
