"""The unconfined jail's working folder: no view or container gives the job a /tmp of its own, so the jail
makes one in the host's temp folder, and must remove it, whether the job ended or was stopped at its deadline
(it was once left behind after every unconfined grading)."""
import os
import tempfile
import time
from pathlib import Path

from sandbox.jail import Confinement, Jail, Limits


class WriteThere:
    """Writes a file in its working folder and names that folder (on stdout, then in its result)."""

    def __init__(self, then_wait: bool) -> None:
        self.then_wait = then_wait

    def prepare(self, fds) -> None:  # noqa: ANN001
        pass

    def run(self, fds) -> bytes:  # noqa: ANN001
        Path("left-behind.txt").write_text("x")
        print(os.getcwd(), flush=True)
        while self.then_wait:
            time.sleep(0.05)
        return os.getcwd().encode()


def test_the_folder_of_a_job_that_ended_is_removed():
    with Jail(Confinement.NONE) as jail:
        outcome = jail.run(WriteThere(then_wait=False), Limits(time_s=20))
    folder = Path(outcome.payload.decode())
    assert folder.name.startswith("dla-unconfined-") and folder.parent == Path(tempfile.gettempdir())
    assert not folder.exists()


def test_the_folder_of_a_job_stopped_at_its_deadline_is_removed():
    with Jail(Confinement.NONE) as jail:
        outcome = jail.run(WriteThere(then_wait=True), Limits(time_s=1))
    assert outcome.timed_out, outcome
    folder = Path(outcome.output.strip())
    assert folder.name.startswith("dla-unconfined-")
    assert not folder.exists()
