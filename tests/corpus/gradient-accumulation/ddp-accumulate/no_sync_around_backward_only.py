# pattern: the slip the DistributedDataParallel.no_sync docstring warns about ("The forward pass should be included inside the context manager, or else gradients will still be synchronized"): loss computed outside, `with model.no_sync(): loss.backward()` for the micro-batches that do not end a window
# class: no-sync-backward-only
# expect: fail
# expect-fail: syncs-once-per-window
# why: DDP decides at forward time whether the next backward all-reduces, so every micro-batch still syncs (the grader's own rank counts each one), and syncs-once-per-window must say that the forward belongs inside no_sync
import contextlib


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    optimizer.zero_grad()
    for step, (x, y) in enumerate(micro_batches, start=1):
        loss = loss_fn(model(x), y) / accum_steps
        sync = step % accum_steps == 0 or step == len(micro_batches)
        with contextlib.nullcontext() if sync else model.no_sync():
            loss.backward()
        if sync:
            optimizer.step()
            optimizer.zero_grad()
