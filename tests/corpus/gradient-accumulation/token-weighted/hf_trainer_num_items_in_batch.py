# pattern: huggingface/transformers since v4.46: Trainer.get_batch_samples(epoch_iterator, num_batches) prefetches the window's batches and counts num_items_in_batch = sum([(batch["labels"].ne(-100)).sum() for batch in batch_samples]); the model's loss is src/transformers/loss/loss_utils.py fixed_cross_entropy (reduction = "sum" if num_items_in_batch is not None else "mean"; loss = loss / num_items_in_batch), and training_step no longer divides by gradient_accumulation_steps when the model accepts loss kwargs
# class: num-items-in-batch
# expect: pass
# why: every micro-batch's summed loss is divided by the valid tokens of its whole window, the short last window (which get_batch_samples fetches short when the iterator runs out) counted on its own, so every update is the window's token mean
import torch.nn.functional as F


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100):
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = F.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        loss = loss / num_items_in_batch
    return loss


def get_batch_samples(epoch_iterator, num_batches):
    batch_samples = []
    for _ in range(num_batches):
        try:
            batch_samples += [next(epoch_iterator)]
        except StopIteration:
            break
    num_items_in_batch = sum([(batch["labels"].ne(-100)).sum() for batch in batch_samples]) if batch_samples else None
    return batch_samples, num_items_in_batch


def train(model, optimizer, micro_batches, accum_steps):
    epoch_iterator = iter([{"input_ids": t, "labels": lab} for t, lab in micro_batches])
    total_updates = -(-len(micro_batches) // accum_steps)
    for _ in range(total_updates):
        batch_samples, num_items_in_batch = get_batch_samples(epoch_iterator, accum_steps)
        for inputs in batch_samples:
            logits = model(inputs["input_ids"])
            loss = fixed_cross_entropy(logits.view(-1, logits.size(-1)), inputs["labels"].view(-1), num_items_in_batch)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
