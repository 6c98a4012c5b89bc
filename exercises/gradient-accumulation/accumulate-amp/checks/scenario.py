"""The accumulate-amp task, built identically in the learner's process (probe) and the grader's (checks)."""
import torch
from torch import nn

from grader.checks.learner.scenarios import params, scaled_loss

ACCUM_STEPS = 3
MICRO_BATCHES = 7  # windows of 3, 3 and a last, partial window of 1
MICRO_BATCH_SIZE = 16
LR = 0.1
# The second call of `train` (build_signature_run) gives the same loop a loss a millionth of the usual
# size, with the learning rate raised to match, and a first micro-batch whose scaled fp16 gradients
# overflow while its loss stays finite, as in real fp16 training (its loss is 1e8 times larger, so its
# gradients at the logits exceed float16's 65504 at any scale; code that stops on a non-finite loss,
# MAE-style, has no reason to). A correct loop skips its first window and then updates normally; without
# a GradScaler the tiny fp16 gradients underflow to zero, and a loop that never clears its gradients
# carries the first window's inf into every later window, so each is skipped: both end far from a
# correct run.
SIGNATURE_LOSS_SCALE = 1e-6
OVERFLOW_LOSS_SCALE = 1e8
OVERFLOW_ROWS = MICRO_BATCH_SIZE - 1  # how the loss tells the overflowing micro-batch (a target of its size)


def build(seed: int, device: str):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    g = torch.Generator().manual_seed(seed + 1)
    micro_batches = [(torch.randn(MICRO_BATCH_SIZE, 16, generator=g).to(device),
                      torch.randint(0, 4, (MICRO_BATCH_SIZE,), generator=g).to(device))
                     for _ in range(MICRO_BATCHES)]
    return model, optimizer, nn.CrossEntropyLoss(), micro_batches


def build_signature_run(seed: int, device: str):
    model, optimizer, loss_fn, micro_batches = build(seed, device)
    for group in optimizer.param_groups:
        group["lr"] = LR / SIGNATURE_LOSS_SCALE
    x, y = micro_batches[0]
    micro_batches[0] = (x[:OVERFLOW_ROWS], y[:OVERFLOW_ROWS])
    tiny, huge = scaled_loss(loss_fn, SIGNATURE_LOSS_SCALE), scaled_loss(loss_fn, OVERFLOW_LOSS_SCALE)

    def signature_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (huge if target.shape[0] == OVERFLOW_ROWS else tiny)(output, target)

    return model, optimizer, signature_loss, micro_batches


def windows(n: int = MICRO_BATCHES, accum_steps: int = ACCUM_STEPS) -> list[range]:
    """The micro-batch indices of each accumulation window, the last one possibly shorter."""
    return [range(start, min(start + accum_steps, n)) for start in range(0, n, accum_steps)]
