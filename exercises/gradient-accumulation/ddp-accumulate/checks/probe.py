"""Runs in the learner's confined process, rank 0 of a real 2-process gloo group; rank 1 is the grader's.

prepare() forks rank 1 before the learner's code is loaded: the grading side's own code (other_rank.py),
which runs a correct accumulation loop on micro-batches the learner's process never sees and counts the
gradient all-reduces this rank joins (grader/checks/ddp.py). This rank wraps the scenario's model in
DistributedDataParallel, calls the learner's train on its micro-batches, then tells rank 1 it is done and
waits for it to report.

The all-reduces during each micro-batch are also counted here, by a DDP comm hook, for the verdict's
figure and to say where they fell: how many there were is rank 1's count.
"""
from torch.nn.parallel import DistributedDataParallel

import other_rank
import scenario
from grader.checks import ddp as two_ranks

RANK1 = {}


def prepare():
    RANK1.update(two_ranks.start_grader_rank(other_rank.count, {"params_after": None}))


def probe(api):
    report, finished = two_ranks.run_learner_rank(RANK1, 0, scenario.WORLD, scenario.TIMEOUT_S, scenario.size(),
                                                  lambda: _train(api))
    return {"rank0": report, "rank1_exited": finished}


def _train(api):
    model, optimizer, loss_fn = scenario.build_model(api.seed)
    ddp = DistributedDataParallel(model)
    allreduces = two_ranks.AllReduceLog(model, ddp, scenario.MICRO_BATCHES)
    steps = [0]  # real optimizer steps, for the message (the outcome is judged by the weights)
    optimizer.register_step_post_hook(lambda *_: steps.__setitem__(0, steps[0] + 1))
    _, error = api.try_call(ddp, optimizer, loss_fn, scenario.micro_batches(api.seed), scenario.ACCUM_STEPS)
    report = {"rank": 0, "error": error, "allreduces": allreduces.per_micro_batch, "forwards": allreduces.forwards,
              "steps": steps[0], "params_after": scenario.params(model)}
    return report, ddp
