# pattern: huggingface/diffusers examples/train_unconditional.py (2022): "for step, batch in enumerate(train_dataloader): ... if step % args.gradient_accumulation_steps != 0: with accelerator.no_sync(model): ... loss = loss / args.gradient_accumulation_steps; accelerator.backward(loss) else: ... accelerator.backward(loss); torch.nn.utils.clip_grad_norm_(...); optimizer.step(); lr_scheduler.step(); optimizer.zero_grad()", with step counted from 0 (accelerator.no_sync(model) is model.no_sync() under DDP; clipping left out)
# class: sync-at-window-start
# expect: fail
# expect-fail: syncs-once-per-window
# why: the counter starts at 0, so micro-batches 1 and 4 (the first of each window) all-reduce and step while 3 and 5 (the windows' last) stay inside no_sync: two all-reduces for two windows, but none by a window's last backward, the first update uses micro-batch 1 alone and micro-batch 5 is never applied; syncs-once-per-window must name the all-reduces at micro-batches 1 and 4 (matches-reference is then skipped)
def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    optimizer.zero_grad()
    for step, (x, y) in enumerate(micro_batches):
        if step % accum_steps != 0:
            with model.no_sync():
                output = model(x)
                loss = loss_fn(output, y)
                loss = loss / accum_steps
                loss.backward()
        else:
            output = model(x)
            loss = loss_fn(output, y)
            loss = loss / accum_steps
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
