def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    """Accumulate over windows of `accum_steps` micro-batches; `model` is DistributedDataParallel."""
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        loss = loss_fn(model(x), y) / accum_steps
        loss.backward()  # under DDP every backward all-reduces the gradients across the ranks
        if (i + 1) % accum_steps == 0 or i + 1 == len(micro_batches):
            optimizer.step()
            optimizer.zero_grad()
