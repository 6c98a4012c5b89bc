# pattern: facebookresearch/fairseq: the cross_entropy criterion (fairseq/criterions/cross_entropy.py) returns F.nll_loss(..., ignore_index=self.padding_idx, reduction="sum") with sample_size = sample["ntokens"] (sentence_avg off), and fairseq/trainer.py train_step backpropagates each sample's summed loss, adds up the window's sample_size and calls self.optimizer.multiply_grads(numer / (sample_size or 1.0)) before clipping and the step
# class: normalize-after-window
# expect: pass
# why: the losses are not divided before backward, but the summed window gradient is multiplied by 1 / (the window's valid tokens) before the step, which is the token mean exactly; gradient-of-its-window and token-weighted judge the gradient the step used, not how the loss was divided
import torch
import torch.nn.functional as F


def criterion(model, sample):
    logits = model(sample["net_input"])
    lprobs = F.log_softmax(logits, dim=-1).view(-1, logits.size(-1))
    loss = F.nll_loss(lprobs, sample["target"].view(-1), ignore_index=-100, reduction="sum")
    sample_size = sample["ntokens"]
    return loss, sample_size


def multiply_grads(params, c):
    for p in params:
        if p.grad is not None:
            p.grad.data.mul_(c)


def train(model, optimizer, micro_batches, accum_steps):
    params = [p for group in optimizer.param_groups for p in group["params"]]
    samples = [{"net_input": t, "target": lab, "ntokens": int((lab != -100).sum())} for t, lab in micro_batches]
    for start in range(0, len(samples), accum_steps):
        optimizer.zero_grad()
        sample_size = 0
        for sample in samples[start:start + accum_steps]:
            loss, sample_size_i = criterion(model, sample)
            loss.backward()
            sample_size += sample_size_i
        multiply_grads(params, 1.0 / (sample_size or 1.0))
        torch.nn.utils.clip_grad_norm_(params, float("inf"))
        optimizer.step()
