# pattern: facebookresearch/fairseq fairseq/trainer.py Trainer.train_step, the "delayed update loop": def maybe_no_sync(): return self.model.no_sync() if i < len(samples) - 1 else contextlib.ExitStack()  # dummy contextmanager; the summed losses are backpropagated undivided and the gradients normalised afterwards with self.optimizer.multiply_grads(numer / sample_size)
# class: normalize-after-all-reduce
# expect: fail
# expect-fail: matches-reference
# why: DEBATABLE, decided fail: the sync is right (one all-reduce per window, by its last backward), and where every process runs this code (fairseq) the mean comes out right, but here the other process divides each loss first as the exercise states, so this process puts the window's undivided sum (3x, then 2x) into the shared all-reduce and divides only its own copy afterwards: both processes end on wrong, and different, weights; matches-reference must fail and name dividing each loss before backward
import contextlib


def multiply_grads(params, c):
    for p in params:
        if p.grad is not None:
            p.grad.data.mul_(c)


def train_step(model, optimizer, loss_fn, samples):
    optimizer.zero_grad()
    sample_size = 0
    for i, (x, y) in enumerate(samples):  # delayed update loop

        def maybe_no_sync():
            if hasattr(model, "no_sync") and i < len(samples) - 1:
                return model.no_sync()
            else:
                return contextlib.ExitStack()  # dummy contextmanager

        with maybe_no_sync():
            loss = loss_fn(model(x), y)
            loss.backward()
        sample_size += 1  # a mean-reduced loss counts as one sample
    multiply_grads(model.parameters(), 1.0 / sample_size)
    optimizer.step()


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    for start in range(0, len(micro_batches), accum_steps):
        train_step(model, optimizer, loss_fn, micro_batches[start:start + accum_steps])
    optimizer.zero_grad()
