# pattern: the DistributedDataParallel.no_sync docstring example (torch/nn/parallel/distributed.py): "with ddp.no_sync(): for input in inputs: ddp(input).backward()  # no synchronization, accumulate grads" then "ddp(another_input).backward()  # synchronize grads", adapted to windows of accum_steps (each loss divided by its window's length, the last one shorter) with an optimizer step after each
# class: no-sync-accumulation
# expect: pass
# why: every micro-batch but a window's last runs forward and backward inside no_sync; the last runs outside it, so each window all-reduces once and both processes step with the window's mean gradient
def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        with model.no_sync():
            for x, y in window[:-1]:
                (loss_fn(model(x), y) / len(window)).backward()  # no synchronization, accumulate grads
        x, y = window[-1]
        (loss_fn(model(x), y) / len(window)).backward()  # synchronize grads
        optimizer.step()
        optimizer.zero_grad()
