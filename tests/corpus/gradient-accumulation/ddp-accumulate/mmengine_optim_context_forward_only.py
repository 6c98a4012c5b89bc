# pattern: open-mmlab/mmengine OptimWrapper (mmengine/optim/optimizer/optimizer_wrapper.py: optim_context yields inside model.no_sync() when not should_sync(); scale_loss divides by _accumulative_counts, or by _remainder_counts in the last, shorter window; update_params backward then steps when should_update()) as used by BaseModel.train_step / MMDistributedDataParallel.train_step, which run only the forward under optim_context and call update_params(loss) after it
# class: no-sync-forward-only
# expect: pass
# why: DDP decides at forward time whether the next backward all-reduces, so a forward inside no_sync with its backward outside accumulates locally, as mmengine relies on; the window's last forward runs outside no_sync, and the last window's losses are divided by its 2 micro-batches, not 3
from contextlib import contextmanager


class OptimWrapper:
    def __init__(self, optimizer, accumulative_counts):
        self.optimizer = optimizer
        self._accumulative_counts = accumulative_counts
        self._inner_count = 0

    def initialize_count_status(self, max_counts):
        self._max_counts = max_counts
        self._divisible_counts = max_counts // self._accumulative_counts * self._accumulative_counts
        self._remainder_counts = max_counts - self._divisible_counts

    def should_update(self):
        return self._inner_count % self._accumulative_counts == 0 or self._inner_count == self._max_counts

    def should_sync(self):
        return ((self._inner_count + 1) % self._accumulative_counts == 0
                or (self._inner_count + 1) == self._max_counts)

    @contextmanager
    def optim_context(self, model):
        if not self.should_sync() and hasattr(model, "no_sync"):
            with model.no_sync():
                yield
        else:
            yield

    def scale_loss(self, loss):
        if self._inner_count < self._divisible_counts:
            loss_factor = self._accumulative_counts
        else:
            loss_factor = self._remainder_counts
        return loss / loss_factor

    def update_params(self, loss):
        loss = self.scale_loss(loss)
        loss.backward()
        self._inner_count += 1
        if self.should_update():
            self.optimizer.step()
            self.optimizer.zero_grad()


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    optim_wrapper = OptimWrapper(optimizer, accumulative_counts=accum_steps)
    optim_wrapper.initialize_count_status(len(micro_batches))
    optimizer.zero_grad()
    for x, y in micro_batches:
        with optim_wrapper.optim_context(model):
            loss = loss_fn(model(x), y)
        optim_wrapper.update_params(loss)
