"""Runs in the learner's confined process, rank 1 of a real 2-process gloo group; rank 0 is the grader's.

prepare() forks rank 0 before the learner's code is loaded: the grading side's own code (other_rank.py),
which runs a correct clipped accumulation loop on micro-batches the learner's process never sees and
counts the gradient all-reduces this rank joins, reporting on a channel of its own
(grader/checks/ddp.py). Then it installs the AMP spies in this process only (rank 0 is forked without
them), which record every backward, clipping and GradScaler call. This rank wraps the
scenario's model in DistributedDataParallel, calls the learner's train on its micro-batches with a
GradScaler, then tells rank 0 it is done and waits for it to report.

The all-reduces during each micro-batch are also counted here, by a DDP comm hook, for the verdict and to
say where they fell: how many there were is rank 0's count. The weights after every real optimizer step
are recorded by a step post-hook, to compare with rank 0's and the reference's window by window.
"""

from torch.nn.parallel import DistributedDataParallel

import other_rank
import scenario
from grader.checks import ddp as two_ranks
from grader.checks import probing

RANK0 = {}
MAX_RECORDED_STEPS = 3 * scenario.MICRO_BATCHES  # a loop that steps more often is wrong already; bounded


def prepare():
    RANK0.update(two_ranks.start_grader_rank(other_rank.count, {"weights": [], "synced_norms": []}))
    probing.install_amp_spies()  # after the fork: rank 0 runs without them


def probe(api):
    report, finished = two_ranks.run_learner_rank(RANK0, scenario.LEARNER_RANK, scenario.WORLD, scenario.TIMEOUT_S,
                                                  scenario.size(), lambda: _train(api))
    return {"learner": report, "grader_rank_exited": finished}


def _train(api):
    model, optimizer, loss_fn = scenario.build_model(api.seed)
    probing.watch_model(model)
    ddp = DistributedDataParallel(model)
    allreduces = two_ranks.AllReduceLog(model, ddp, scenario.MICRO_BATCHES)
    probing.watch_optimizer(optimizer)  # optimizer.class_step: the norm of the gradients each real step used
    weights = []  # after each real step, the outcome window by window

    def stepped(*_):
        if len(weights) < MAX_RECORDED_STEPS:
            weights.append(scenario.params(model))

    optimizer.register_step_post_hook(stepped)
    scaler = scenario.make_scaler()
    probing.RECORDER.mark("call")
    _, error = api.try_call(ddp, optimizer, scaler, loss_fn, scenario.micro_batches(api.seed), scenario.ACCUM_STEPS,
                            scenario.MAX_NORM)
    report = {"rank": scenario.LEARNER_RANK, "error": error, "allreduces": allreduces.per_micro_batch,
              "forwards": allreduces.forwards, "weights": weights, "params_after": scenario.params(model)}
    return report, ddp
