"""The in-process runner's turns (academy.runners.threads.ThreadRunner, real threads): one running job per key, keys
in a line, instructors' jobs one key among the learners' (neither starving them nor starved)."""
from __future__ import annotations

import threading
import time

from academy.jobs import STAFF_KEY
from academy.runners.threads import ThreadRunner


class Log:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, int]] = []  # (start|end, key, id)
        self.running: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.handlers: dict[str, object] = {}  # the runner's jobs, by kind: one kind per key and duration

    def runner(self, app, workers: int) -> ThreadRunner:  # noqa: ANN001
        return ThreadRunner(app, workers=workers, handlers=self.handlers)

    def job(self, key: str, seconds: float) -> str:
        """The kind of a job that logs its start and end under `key` and takes `seconds`."""
        def run(object_id: int) -> None:
            with self.lock:
                self.events.append(("start", key, object_id))
                self.running[key] = self.running.get(key, 0) + 1
                self.most[key] = max(self.most.get(key, 0), self.running[key])
            time.sleep(seconds)
            with self.lock:
                self.running[key] -= 1
                self.events.append(("end", key, object_id))
        kind = f"job_{key}_{seconds}"
        self.handlers[kind] = run
        return kind

    def started(self, key: str) -> list[int]:
        return [i for kind, k, i in self.events if kind == "start" and k == key]

    def position(self, key: str, object_id: int) -> int:
        return self.events.index(("start", key, object_id))


def test_staff_jobs_and_learners_take_turns(app) -> None:  # noqa: ANN001
    log = Log()
    runner = log.runner(app, 2)
    for n in range(4):  # a regrade/validation burst first ...
        runner.submit(log.job(STAFF_KEY, 0.3), 100 + n, STAFF_KEY)
    stop = threading.Event()

    def learners() -> None:  # ... then learners keep coming, each their own key
        n = 0
        while not stop.is_set():
            runner.submit(log.job(f"user-{n}", 0.05), n, f"user-{n}")
            n += 1
            time.sleep(0.03)
    feeder = threading.Thread(target=learners)
    feeder.start()
    deadline = time.monotonic() + 20
    while len(log.started(STAFF_KEY)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    feeder.join()
    runner.shutdown()
    assert log.started(STAFF_KEY) == [100, 101, 102, 103]  # not starved by a stream of learners
    assert log.most[STAFF_KEY] == 1  # never more than one grader for the staff
    # Learners did not wait for the staff burst: the first learner started before the second staff job.
    assert log.position("user-0", 0) < log.position(STAFF_KEY, 101)


def test_one_key_floods_and_another_waits_one_turn(app) -> None:  # noqa: ANN001
    log = Log()
    runner = log.runner(app, 2)
    for n in range(6):
        runner.submit(log.job("guest@10.0.0.9", 0.2), n, "guest@10.0.0.9")
    time.sleep(0.05)
    runner.submit(log.job("user-1", 0.01), 99, "user-1")
    runner.shutdown()
    assert log.most["guest@10.0.0.9"] == 1
    # Started right away on the grader the flood could not take.
    assert log.position("user-1", 99) <= 2
