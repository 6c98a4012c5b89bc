"""Runs in the learner's confined process, rank 1 of a real 2-process gloo group; rank 0 is the grader's.

prepare() forks rank 0 before the learner's code is loaded: the grading side's own code, which gets its
loop (grader_rank.py) and its micro-batches from the referee, runs a correct clipped accumulation loop on
data the learner's process never sees and counts the gradient all-reduces this rank joins, reporting on a
channel of its own (grader/checks/learner/ddp.py). Then it installs the AMP spies in this process only (rank 0 is
forked without them), which record every backward, clipping and GradScaler call. This rank wraps the
scenario's model in DistributedDataParallel, calls the learner's train on its micro-batches with a
GradScaler, then tells rank 0 it is done and waits for it to report.

The all-reduces during each micro-batch are also counted here, by a DDP comm hook, for the verdict and to
say where they fell: how many there were is rank 0's count. The weights and the scaler's scale after every
window (read when the next window's first forward starts, and after train returns) are recorded, to compare
with rank 0's and the reference's window by window, whether or not the window's step was skipped.
"""
from torch.nn.parallel import DistributedDataParallel

import scenario
from grader.checks.learner import ddp as two_ranks
from grader.checks.learner import probing

GRADER_RANK = {}


def prepare():
    GRADER_RANK.update(two_ranks.start_grader_rank(scenario.size()))
    probing.install_amp_spies()  # after the fork: rank 0 runs without them


def probe(api):
    report, finished = two_ranks.run_learner_rank(GRADER_RANK, scenario.size(), lambda group: _train(api, group))
    return {"learner": report, "grader_rank_exited": finished}


def _train(api, group):
    model, optimizer, loss_fn = scenario.build_model(api.seed)
    probing.watch_model(model)
    ddp = DistributedDataParallel(model, process_group=group)
    allreduces = two_ranks.AllReduceLog(model, ddp, scenario.MICRO_BATCHES)
    probing.watch_optimizer(optimizer)  # optimizer.class_step: the norm of the gradients each real step used
    scaler = scenario.make_scaler()
    starts = {window[0] for window in scenario.windows()[1:]}
    weights, scales, steps = [], [], [0]  # after each window; real optimizer steps, for the message

    def window_ended():
        weights.append(scenario.params(model))
        scales.append(float(scaler.get_scale()))

    def forward(*_):
        if allreduces.forwards - 1 in starts and len(weights) < len(scenario.windows()):
            window_ended()  # AllReduceLog's hook ran first: forwards counts this one

    model.register_forward_pre_hook(forward)
    optimizer.register_step_post_hook(lambda *_: steps.__setitem__(0, steps[0] + 1))
    probing.RECORDER.mark("call")
    _, error = api.try_call(ddp, optimizer, scaler, loss_fn, scenario.micro_batches(api.seed), scenario.ACCUM_STEPS,
                            scenario.MAX_NORM)
    if len(weights) < len(scenario.windows()):
        window_ended()
    report = {"rank": scenario.LEARNER_RANK, "error": error, "allreduces": allreduces.per_micro_batch,
              "forwards": allreduces.forwards, "weights": weights, "scales": scales, "steps": steps[0],
              "params_after": scenario.params(model)}
    return report, ddp
