"""What Run calls train with: a tiny model, a scheduler, an EMA, a scaler starting at 2^18 (so the first 3
steps are skipped and train returns 3) and 6 batches (the grader's own run has 16, starts at 2^24 and has
two batches with outliers)."""
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


def example(device):
    torch.manual_seed(0)
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 18, growth_interval=3)
    batches = [(torch.randn(8, 4, device=device), torch.randn(8, 2, device=device)) for _ in range(6)]
    return model, optimizer, scheduler, ema, scaler, nn.MSELoss(), batches
