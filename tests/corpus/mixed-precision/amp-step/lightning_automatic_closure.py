# pattern: Lightning automatic optimization under precision="16-mixed": the loop builds a closure (training_step, then zero_grad, then backward; lightning/pytorch/loops/optimization/automatic.py Closure) and MixedPrecision.optimizer_step calls closure() itself before scaler.step, because GradScaler does not accept closures
# class: closure
# expect: pass
# why: the closure runs forward and loss under autocast, clears the gradients before backward and backpropagates the scaled loss; then one scaler.step and one scaler.update; calling the closure first is exactly how Lightning combines closures with a GradScaler
import torch


def make_closure(model, optimizer, scaler, loss_fn, x, y, result):
    def training_step():
        with torch.autocast('cuda', dtype=torch.float16):
            return loss_fn(model(x), y)

    def closure():
        loss = training_step()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        result['loss'] = loss
        return loss

    return closure


def optimizer_step(optimizer, scaler, closure):
    closure_result = closure()
    if closure_result is not None:
        scaler.unscale_(optimizer)
    step_output = scaler.step(optimizer)
    scaler.update()
    return step_output


def train_step(model, optimizer, scaler, loss_fn, x, y):
    result = {}
    closure = make_closure(model, optimizer, scaler, loss_fn, x, y, result)
    optimizer_step(optimizer, scaler, closure)
    return result['loss']
