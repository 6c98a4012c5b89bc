# pattern: huggingface/transformers src/transformers/trainer.py Trainer.training_step before v4.46: loss = self.compute_loss(model, inputs) (the model's own mean cross-entropy over the micro-batch's labels != -100), then loss = loss / self.args.gradient_accumulation_steps and self.accelerator.backward(loss); the bug the blog post "Fixing Gradient Accumulation" (huggingface/blog#2414) and huggingface/transformers#34191 fixed in October 2024
# class: divide-mean-by-accum-steps
# expect: fail
# expect-fail: token-weighted
# why: each micro-batch's token mean counts 1/3 of the window whatever its valid tokens, so a micro-batch of 6 tokens weighs each of them about 7 times more than one of 44 does; the message must name each micro-batch's token weight against 1/(the window's valid tokens)
import torch.nn.functional as F


class _Args:
    def __init__(self, gradient_accumulation_steps):
        self.gradient_accumulation_steps = gradient_accumulation_steps


def compute_loss(model, inputs):
    logits = model(inputs["input_ids"])
    return F.cross_entropy(logits.view(-1, logits.size(-1)), inputs["labels"].view(-1), ignore_index=-100)


def training_step(model, inputs, args):
    loss = compute_loss(model, inputs)
    loss = loss / args.gradient_accumulation_steps
    loss.backward()
    return loss.detach()


def train(model, optimizer, micro_batches, accum_steps):
    args = _Args(accum_steps)
    steps_in_epoch = len(micro_batches)
    optimizer.zero_grad()
    for step, (tokens, labels) in enumerate(micro_batches):
        training_step(model, {"input_ids": tokens, "labels": labels}, args)
        if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == steps_in_epoch:
            optimizer.step()
            optimizer.zero_grad()
