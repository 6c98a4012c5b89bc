# mistake: the starter as given: every backward all-reduces, 5 all-reduces where one per window (2) would do
# expect-fail: syncs-once-per-window
# expect-skip: matches-reference
def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    """Accumulate over windows of `accum_steps` micro-batches; `model` is DistributedDataParallel."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_size = min(accum_steps, n - (i - i % accum_steps))  # the last window may be shorter
        loss = loss_fn(model(x), y) / window_size
        loss.backward()  # under DDP every backward all-reduces the gradients across the ranks
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
