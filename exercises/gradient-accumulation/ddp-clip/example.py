"""What Run calls train with: a small model wrapped in DistributedDataParallel in a one-process gloo group
(the grader runs two), a CPU GradScaler, 5 micro-batches of 4 samples, windows of 2, max_norm 0.1."""
import os
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def example(device):
    torch.manual_seed(0)
    if not dist.is_initialized():
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        store = os.path.join(tempfile.mkdtemp(), "store")
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    micro_batches = [(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(5)]
    return model, optimizer, torch.amp.GradScaler("cpu"), nn.CrossEntropyLoss(), micro_batches, 2, 0.1
