"""Runs in the learner's confined process, rank 1 of a real 2-process gloo group; rank 0 is the grader's.

prepare() forks rank 0 before the learner's code is loaded: the grading side's own code, which gets its
loop (grader_rank.py) and its micro-batches from the referee, runs a correct accumulation loop on data the
learner's process never sees and counts the gradient all-reduces this rank joins (grader/checks/learner/ddp.py).
This rank wraps the scenario's model in DistributedDataParallel, calls the learner's train on its
micro-batches, then tells rank 0 it is done and waits for it to report.

The all-reduces during each micro-batch are also counted here, by a DDP comm hook, for the verdict's
figure and to say where they fell: how many there were is rank 0's count.
"""
from torch.nn.parallel import DistributedDataParallel

import scenario
from grader.checks.learner import ddp as two_ranks

GRADER_RANK = {}


def prepare():
    GRADER_RANK.update(two_ranks.start_grader_rank(scenario.size()))


def probe(api):
    report, finished = two_ranks.run_learner_rank(GRADER_RANK, scenario.size(), lambda group: _train(api, group))
    return {"learner": report, "grader_rank_exited": finished}


def _train(api, group):
    model, optimizer, loss_fn = scenario.build_model(api.seed)
    ddp = DistributedDataParallel(model, process_group=group)
    allreduces = two_ranks.AllReduceLog(model, ddp, scenario.MICRO_BATCHES)
    steps = [0]  # real optimizer steps, for the message (the outcome is judged by the weights)
    optimizer.register_step_post_hook(lambda *_: steps.__setitem__(0, steps[0] + 1))
    _, error = api.try_call(ddp, optimizer, loss_fn, scenario.micro_batches(api.seed), scenario.ACCUM_STEPS)
    report = {"rank": scenario.LEARNER_RANK, "error": error, "allreduces": allreduces.per_micro_batch,
              "forwards": allreduces.forwards, "steps": steps[0], "params_after": scenario.params(model)}
    return report, ddp
