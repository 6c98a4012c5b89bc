# pattern: facebookresearch/fairseq fairseq/trainer.py Trainer.train_step: the workers' sample_size summed with an all-reduce (_aggregate_logging_outputs -> _fast_stat_sync_sum, distributed_utils.all_reduce) and the gradients normalised by data_parallel_world_size / sample_size; maybe_no_sync() over every sample but the last; here the all-reduced sample size is taken at the window's start and the normaliser applied to each loss before its backward
# class: all-reduced-sample-size
# expect: pass
# why: the window's sample count summed over both processes (2 x its micro-batches, each mean-reduced loss counting one) times the world size DDP averages over gives each loss divided by its window's size, one all-reduce at the window's end: a correct loop with a collective of its own, which the grader's process must answer rather than take for a gradient all-reduce
import contextlib

import torch
import torch.distributed as dist


def all_reduce_sample_size(sample_size):
    buffer = torch.tensor([float(sample_size)], dtype=torch.float64)
    dist.all_reduce(buffer)  # sum over the workers
    return buffer.item()


def train_step(model, optimizer, loss_fn, samples):
    sample_size = all_reduce_sample_size(len(samples))  # a mean-reduced loss counts as one sample
    numer = dist.get_world_size()  # DDP averages the gradients over the workers
    for i, (x, y) in enumerate(samples):  # delayed update loop

        def maybe_no_sync():
            if hasattr(model, "no_sync") and i < len(samples) - 1:
                return model.no_sync()
            return contextlib.ExitStack()  # dummy contextmanager

        with maybe_no_sync():
            loss = loss_fn(model(x), y) * (numer / sample_size)
            loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        train_step(model, optimizer, loss_fn, micro_batches[start:start + accum_steps])
