# pattern: a token count taken from the batch's shape or mask instead of its labels: a test of torchtitan's forward_backward_step sets global_valid_tokens = torch.tensor(BATCH_SIZE * SEQ_LEN) (right for its unpadded data), and SkyworkAI/Skywork#50 questions eval/eval_loss.py counting tokens as torch.sum(attention_mask) rather than the labels the loss uses; here each window's summed loss divided by labels.numel() over its micro-batches, every position, padding included
# class: counts-padding
# expect: fail
# expect-fail: token-weighted
# why: the window's positions (144) are about twice its valid tokens (about 70), so every token weighs about half of 1/(valid tokens); the message must say the count included the padding
import torch.nn.functional as F


def train(model, optimizer, micro_batches, accum_steps):
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        num_items_in_batch = sum(labels.numel() for _, labels in window)
        for input_ids, labels in window:
            logits = model(input_ids)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), reduction="sum")
            (loss / num_items_in_batch).backward()
        optimizer.step()
        optimizer.zero_grad()
