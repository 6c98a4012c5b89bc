# pattern: facebookresearch/fairseq fairseq/trainer.py Trainer.train_step: the workers' sample_size summed with an all-reduce (_aggregate_logging_outputs -> _fast_stat_sync_sum) and the gradients normalised by data_parallel_world_size / sample_size, then self.clip_grad_norm(max_norm) after the sync; maybe_no_sync() over every sample but the last; here the all-reduced sample size is taken at the window's start and the normaliser applied to each loss before its backward, with the GradScaler's unscale_ before the clip
# class: all-reduced-sample-size
# expect: pass
# why: the window's sample count summed over both processes times the world size DDP averages over gives each loss divided by its window's size; unscale_ once after the syncing backward, clip, scaler.step and update: a correct loop with a collective of its own, which the grader's process must answer rather than take for a gradient all-reduce
import contextlib

import torch
import torch.distributed as dist


def all_reduce_sample_size(sample_size):
    buffer = torch.tensor([float(sample_size)], dtype=torch.float64)
    dist.all_reduce(buffer)  # sum over the workers
    return buffer.item()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        samples = micro_batches[start:start + accum_steps]
        sample_size = all_reduce_sample_size(len(samples))  # a mean-reduced loss counts as one sample
        numer = dist.get_world_size()
        for i, (x, y) in enumerate(samples):
            maybe_no_sync = model.no_sync if i < len(samples) - 1 else contextlib.ExitStack
            with maybe_no_sync():
                loss = loss_fn(model(x), y) * (numer / sample_size)
                scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
