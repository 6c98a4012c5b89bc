"""The jail: run a job in a forked, confined process, confined fully or not at all. It knows nothing of
what it runs (a job is any picklable object with `prepare(fds)` and `run(fds) -> bytes`).

One file per concern, applied as one ordered sequence per mode (confinement.py):

    jail.py        Jail.run: pipes, the deadline, pause and resume, how it ended (Outcome)
    zygote.py      the clean fork source: every job is forked from a copy made before secrets existed
    tree.py        the middle and the confined process, each running its strategy's steps in order
    confinement.py the modes (NAMESPACES, CONTAINER, NONE) and their steps
    cgroups.py     one cgroup per job: memory, processes, CPU, freezer, a peak it cannot reset
    namespaces.py  user, PID, network, mount, IPC, UTS
    view.py        an allowlist root entered with pivot_root
    identity.py    a uid of its own, no capabilities
    rlimits.py     per-process limits
    seccomp.py     the system-call filter, the last step
    meter.py       memory meters the job cannot write
    preflight.py   what this host lacks to confine
"""
from sandbox.jail.confinement import Confinement, Limits, in_container
from sandbox.jail.jail import OUTPUT_CAP, Jail, LearnerHandle, Outcome, PauseNotHeld
from sandbox.jail.tree import Job

__all__ = ["Confinement", "Limits", "in_container", "Jail", "LearnerHandle", "Outcome", "PauseNotHeld", "Job",
           "OUTPUT_CAP"]
