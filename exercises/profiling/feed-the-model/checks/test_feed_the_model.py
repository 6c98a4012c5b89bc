"""Checks for profiling/feed-the-model, run in the grading process."""
import statistics

import pytest
import torch

import reference
import scenario
from grader.checks.grading.judging import bar_figure, check, check_faster, fail, figure, largest_difference, show, table_figure

B = scenario.BATCH


@pytest.fixture(scope="module")
def replay(outside, run):
    """The replayed epoch's records, its batches and the original loop's weights after it, on the data the
    referee drew for it."""
    if outside["replay_seed"] is None:
        fail("The grader never got to replay your epoch (see the other checks' messages).")
    model, optimizer, loss_fn, dataset, sampler, batch_size = scenario.build(outside["replay_seed"], run["device"])
    features, labels = reference.decoded(dataset)
    batches = reference.batches_of(sampler, batch_size)
    reference.original_train(model, optimizer, loss_fn, dataset, sampler, batch_size)
    return {"params": scenario.params(model), "features": features, "labels": labels, "batches": batches,
            "finder": reference.RecordFinder(features),
            "position": {record: i for i, record in enumerate(sampler.indices)}}


def batch_inputs(observed) -> list:
    """The inputs of the first KEPT_BATCHES model calls, whatever the learner's process sent: what the
    grading side examines is bounded by the task, not by the frame (a frame may hold 32 million elements)."""
    inputs = observed["inputs"]
    return list(inputs[:scenario.KEPT_BATCHES]) if isinstance(inputs, list) else []


def rows_of(x) -> int:
    return len(x) if isinstance(x, torch.Tensor) and x.dim() else 0


@pytest.fixture(scope="module")
def seen(observed, replay):
    """Which record each row of each batch the learner's model was given is (None: no record decodes to it),
    for the batches of the original's size at most: a larger one is the wrong batch whatever its rows are,
    and its rows are not examined (at most KEPT_BATCHES x BATCH rows are, ~9,000)."""
    return [_records_of(x, replay) for x in batch_inputs(observed)]


def _records_of(rows, replay):
    if not isinstance(rows, torch.Tensor) or rows.dim() != 2 or rows.shape[1] != scenario.FEATURES:
        return [None] * (min(len(rows), B + 1) if isinstance(rows, torch.Tensor) and rows.dim() else 1)
    if len(rows) > B:
        return [None] * (B + 1)
    return replay["finder"].records_of(rows)


def _positions(records, position):
    """The records' places in the sampler's order, in words: 'a-b' when consecutive, else a few of them."""
    places = [position[r] + 1 for r in records]
    if places == list(range(places[0], places[0] + len(places))):
        return f"{places[0]}-{places[-1]}"
    return "mixed: " + ", ".join(str(p) for p in places[:3]) + ", ..."


def _what_differs(observed, replay, seen):
    """The first way the learner's epoch trained on other batches than the original's, in words; None when
    every batch held the original's records (in any order within it) with their labels."""
    want = [len(b) for b in replay["batches"]]
    sizes = [rows_of(x) for x in batch_inputs(observed)]
    calls, last = observed["calls"], want[-1]
    layout = (f"the original cuts the sampler's {scenario.RECORDS} records into {len(want)} batches of "
              f"batch_size={B}, the last one the {last} left over")
    if calls == 0:
        return "Your train never called the model on the grader's epoch."
    if sizes[:len(want) - 1] == want[:-1] and calls == len(want) - 1:
        return (f"Your epoch trained on {calls} batches, and {layout}: your last batch was dropped (drop_last=True, "
                f"or a loop that stops at the last whole batch), so its {last} records were never trained on.")
    if calls != len(want) or sizes[:len(want)] != want:
        k = next((i for i, (got, size) in enumerate(zip(sizes, want)) if got != size), min(calls, len(want)) - 1)
        return (f"Batch {k + 1} of your epoch held {sizes[k] if k < len(sizes) else 'no'} records and your epoch made "
                f"{calls} steps, where {layout} (batch {k + 1}: {want[k] if k < len(want) else 'none'}).")
    trained = set()
    for k, (records, expected) in enumerate(zip(seen, replay["batches"])):
        if None in records:
            return (f"Row {records.index(None) + 1} of batch {k + 1} is not any record of the dataset as dataset[i] "
                    "decodes it: train on the dataset's own features (dataset[indices] decodes a batch exactly as "
                    "dataset[i] decodes each record).")
        again = [r for r in records if r in trained]
        if again:
            return (f"Batch {k + 1} held {len(again)} records that an earlier batch already held: every record is "
                    "trained on once per epoch.")
        if sorted(records) != sorted(expected):
            return (f"Batch {k + 1} held the records at the sampler's positions "
                    f"{_positions(records, replay['position'])}, where the original's batch {k + 1} holds positions "
                    f"{k * B + 1}-{k * B + len(expected)}: follow the sampler's order (the sampler you were given, "
                    "in batches, never shuffle=True or the dataset's own order).")
        trained.update(records)
        targets = observed["targets"][k] if k < len(observed["targets"]) else None
        if isinstance(targets, torch.Tensor) and not torch.equal(targets.long().flatten(),
                                                                 replay["labels"][records]):
            return (f"Batch {k + 1}'s labels, as your loss got them, are not the labels of its records: each "
                    "record's features go with its own label.")
    return None


@check("same-training")
def test_the_epoch_trains_like_the_original(observed, replay, seen):
    name, diff = largest_difference(observed["params_after"], replay["params"])
    allowed = reference.TOLERANCE * max(1.0, max(float(w.abs().max()) for w in replay["params"].values()))
    if not diff <= allowed:
        why = _what_differs(observed, replay, seen)
        if why is None:
            why = ("Your epoch trained on the original's batches, in its order, yet its updates differ: each batch "
                   "makes one step, optimizer.zero_grad(), loss_fn(model(x), y), backward, optimizer.step().")
        fail(f"After the grader's epoch your weights differ from the original loop's by up to {diff:.3g} "
             f"(in '{name}'). {why}")


@check("same-training")
def test_every_timed_epoch_trains_like_the_original(outside):
    """The epochs the grader timed are checked too, each on its own data: a loop that skips work when it is
    timed, or keeps anything from an earlier epoch, fails here."""
    for r in outside["rounds"]:
        got, want = r["learner_params"], r["original_params"]
        missing = [name for name, w in want.items() if name not in got or got[name].shape != w.shape]
        if missing:
            fail(f"In the grader's timing round {r['index']}, the weights after your epoch were not all reported: "
                 f"'{missing[0]}' was missing or had another shape.")
        name, diff = largest_difference(got, want)
        if not diff <= reference.TOLERANCE * max(1.0, max(float(w.abs().max()) for w in want.values())):
            fail(f"In the grader's timing round {r['index']}, on that round's own data, your weights after the epoch "
                 f"differ from the original loop's by up to {diff:.3g} (in '{name}'). Every call of train must "
                 "train on the dataset and sampler it is given, that epoch's: nothing kept from an earlier call.")


def _waited(observed):
    """Where the replayed epoch's time went, as the learner's process measured it, in words (or '')."""
    loaders, total = observed["loaders"], observed["seconds"]
    if not loaders["batches"] or not total > 0:
        return ""
    return (f" Your replayed epoch took {total * 1000:.0f} ms in your process, {loaders['seconds'] * 1000:.0f} ms "
            f"of it ({min(1.0, loaders['seconds'] / total):.0%}) inside the DataLoader's __next__, where the model "
            "waits for its next batch.")


@check("fetches-whole-batches")
def test_every_batch_is_fetched_with_one_call(observed):
    one, workers = observed["fetched_one"], observed["loaders"]["workers"]
    if one > scenario.RECORDS // 100:
        if workers:
            fail(f"Your epoch's {workers} DataLoader worker processes fetched about {one} records one at a time, "
                 "dataset[i], each decoded on its own and then collated into a batch. Workers spread that "
                 "per-record cost over other CPU cores, which the grader's machine does not have to spare; it "
                 "stays the same work. Fetch each batch with one dataset[indices] call instead (then no worker "
                 f"is needed).{_waited(observed)}")
        fail(f"Your epoch fetched {one} records one at a time, dataset[i], each decoded on its own and then "
             f"collated into a batch: {one} small decodes where {-(-scenario.RECORDS // B)} batched ones would do."
             f"{_waited(observed)} Fetch each batch with one call, dataset[indices]: a BatchSampler over the "
             "sampler as the DataLoader's sampler, with batch_size=None.")


@check("faster")
def test_the_epoch_is_faster(outside, observed):
    workers = observed["loaders"]["workers"]
    if workers:
        why = (f"Your DataLoader started {workers} worker processes every epoch: starting them and passing each "
               "batch between processes costs more than it saves on the grader's few CPU cores. Fetch whole "
               "batches in your own process (num_workers=0).")
    else:
        why = "Time your loop's parts: where does the epoch wait?" + _waited(observed)
    check_faster(outside, reference.MIN_SPEEDUP, "epoch", why)


# -- what the verdict shows (grader/core/display.py) ------------------------------------------------------------

@figure
def test_show_the_epoch(outside, observed, replay, seen):
    """The epochs on the grader's clock against the bar, and the batches the replayed epoch trained on."""
    rounds = outside["rounds"]
    if rounds:
        original = statistics.median(r["original_s"] for r in rounds) * 1000
        yours = statistics.median(r["learner_s"] for r in rounds) * 1000
        loaders = observed["loaders"]
        share = (f" In your replayed epoch {min(1.0, loaders['seconds'] / observed['seconds']):.0%} of the time "
                 "went inside the DataLoader's __next__." if loaders["batches"] and observed["seconds"] > 0 else "")
        show(figure=bar_figure(
            "epoch-time", "One epoch, timed on the grader's clock", "median time per epoch (ms)",
            f"Your loop must come under the line: the original's time over {reference.MIN_SPEEDUP:g}.{share}",
            f"Bar chart: the original loop's epoch took {original:.0f} ms, yours {yours:.0f} ms (medians of "
            f"{len(rounds)} rounds); the line is at {original / reference.MIN_SPEEDUP:.0f} ms.",
            [("the original loop", original, "reference"), ("your loop", yours, "yours"),
             (f"the bar: the original / {reference.MIN_SPEEDUP:g}", original / reference.MIN_SPEEDUP, "limit")]))
    rows, marked = [], []
    for k, (x, records) in enumerate(zip(batch_inputs(observed), seen)):
        expected = replay["batches"][k] if k < len(replay["batches"]) else []
        known = [r for r in records if r is not None]
        same = len(known) == len(records) == rows_of(x) and sorted(known) == sorted(expected)
        where = (f"more than a batch of {B}: not examined" if rows_of(x) > B else
                 _positions(known, replay["position"]) if known else "not records")
        rows.append([k + 1, rows_of(x), where, "yes" if same else "no"])
        if not same:
            marked.append(k)
    show(figure=table_figure(
        "batches", "The batches your replayed epoch trained on",
        ["batch", "records", "their positions in the sampler's order", "the original's batch"], rows,
        f"The original trains on the sampler's order in batches of {B}, the last one shorter; rows that differ "
        "are marked.",
        f"Table of the {len(rows)} batches your model was given, with how many records each held, where they come "
        "from in the sampler's order, and whether they are the original's batch.", marked_rows=marked))
