# pattern: autocast around the model call only, the loss computed after the with block (as in answers that "keep the loss in fp32" by hand, and in the Swin Transformer-style loops this corpus has for amp-step), here with bfloat16
# class: bf16-loss-outside-autocast
# expect: fail
# expect-fail: bf16-autocast
# why: the lesson's rule is that autocast covers the forward pass and the loss; here the loss runs outside it (autocast would itself run mse_loss in float32, so nothing is gained by leaving it out); the message must name the loss line
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            output = model(x)
        loss = loss_fn(output.float(), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
