# pattern: `logger.info("loss %s", loss)` with the standard logging module inside the forward, as in many HF-style model files (transformers `logger = logging.get_logger(__name__)`)
# class: logging-side-effect
# expect: fail
# expect-fail: no-graph-breaks
# why: a logging call is a Python side effect dynamo does not put in the graph: a break at its line
import logging

import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0
logger = logging.getLogger(__name__)


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    logger.warning("z-loss %s", z_loss)
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
