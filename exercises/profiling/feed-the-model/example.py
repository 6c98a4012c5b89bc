"""What Run calls train with: the grader's own task on a fixed seed (8000 records in batches of 512, in a
shuffled order), so a `time.perf_counter()` around your loop, printed, shows what an epoch costs."""
import scenario


def example(device):
    return scenario.build(1, device)
