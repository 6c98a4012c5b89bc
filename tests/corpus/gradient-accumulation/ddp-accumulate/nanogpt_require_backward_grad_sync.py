# pattern: karpathy/nanoGPT train.py: "if ddp: ... the official way to do this is with model.no_sync() context manager ... looking at the source of that context manager, it just toggles this variable: model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)", set before each micro-step's forward; adapted to windows whose last one is shorter (loss divided by the window's length)
# class: require-backward-grad-sync-flag
# expect: pass
# why: DDP reads require_backward_grad_sync at forward time, exactly what no_sync toggles, so only each window's last micro-batch all-reduces; each loss is divided by its own window's size and the flag is left True at the end
def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    for start in range(0, n, accum_steps):
        window = micro_batches[start:start + accum_steps]
        for micro_step, (X, Y) in enumerate(window):
            # in DDP training we only need to sync gradients at the last micro step.
            model.require_backward_grad_sync = (micro_step == len(window) - 1)
            logits = model(X)
            loss = loss_fn(logits, Y)
            loss = loss / len(window)  # scale the loss to account for gradient accumulation
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
