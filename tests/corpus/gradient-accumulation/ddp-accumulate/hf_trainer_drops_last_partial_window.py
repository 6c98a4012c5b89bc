# pattern: huggingface/transformers Trainer._inner_training_loop (v4.x before the move to accelerate's sync_gradients): "if ((step + 1) % args.gradient_accumulation_steps != 0) and args.local_rank != -1 and args._no_sync_in_gradient_accumulation: with model.no_sync(): tr_loss_step = self.training_step(model, inputs)", training_step dividing by gradient_accumulation_steps, and the step only "if (step + 1) % args.gradient_accumulation_steps == 0 or (steps_in_epoch <= args.gradient_accumulation_steps and (step + 1) == steps_in_epoch)"; the dropped tail is the complaint of Lightning-AI/pytorch-lightning#4653 and timoschick/pet#36
# class: drops-partial-window
# expect: fail
# expect-fail: syncs-once-per-window
# why: with 5 micro-batches and accum_steps=3 the last two run inside no_sync and never step (the epoch is longer than one window), so the processes all-reduce once for two windows and the last window's gradients are never applied; syncs-once-per-window must say the last window never synced (matches-reference is then skipped)
def training_step(model, loss_fn, inputs, gradient_accumulation_steps):
    x, y = inputs
    loss = loss_fn(model(x), y)
    if gradient_accumulation_steps > 1:
        loss = loss / gradient_accumulation_steps
    loss.backward()
    return loss.detach()


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    steps_in_epoch = len(micro_batches)
    model.zero_grad()
    tr_loss = 0.0
    for step, inputs in enumerate(micro_batches):
        if (step + 1) % accum_steps != 0:
            # Avoid unnecessary DDP synchronization since there will be no backward pass on this example.
            with model.no_sync():
                tr_loss += training_step(model, loss_fn, inputs, accum_steps)
        else:
            tr_loss += training_step(model, loss_fn, inputs, accum_steps)
        if (step + 1) % accum_steps == 0 or (
            # last step in epoch but step is always smaller than gradient_accumulation_steps
            steps_in_epoch <= accum_steps and (step + 1) == steps_in_epoch
        ):
            optimizer.step()
            model.zero_grad()
