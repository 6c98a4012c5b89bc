"""What Run calls compute_loss with: a small attention model, one batch of 12 tokens a row, a smoothing
(Run calls it as it is, not compiled)."""
import torch
from torch import nn


class TinyAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.head = nn.Linear(16, 32)


def example(device):
    torch.manual_seed(0)
    return TinyAttention().to(device), torch.randint(0, 32, (4, 12), device=device), 0.1
