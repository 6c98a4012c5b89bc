"""What a correct ddp-accumulate run ends with: the grading process only (never imported by the probe, the
scenario or the grader's rank, so never in the learner's process)."""
import scenario


def reference_params(seed: int, other_seed: int) -> dict:
    """One process, each window's mean gradient over both ranks' micro-batches, SGD with momentum."""
    model, optimizer, loss_fn = scenario.build_model(seed)
    shares = {scenario.GRADER_RANK: scenario.micro_batches(other_seed), scenario.LEARNER_RANK: scenario.micro_batches(seed)}
    optimizer.zero_grad()
    for window in scenario.windows():
        for i in window:
            for rank in range(scenario.WORLD):
                x, y = shares[rank][i]
                (loss_fn(model(x), y) / len(window) / scenario.WORLD).backward()
        optimizer.step()
        optimizer.zero_grad()
    return scenario.params(model)
