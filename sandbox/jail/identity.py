"""Who the confined process is: a uid of its own (as root), no capabilities, and how all its processes
are signalled when they share no PID namespace (in a container)."""
from __future__ import annotations

import os

from sandbox.jail.libc import Libc
from sandbox.settings import LEARNER_UID_BASE


def confined_uid(middle_pid: int) -> int:
    """The middle process's pid above the base (sandbox/settings.py): unique while it runs. Containers run
    side by side share the host's per-uid process count (RLIMIT_NPROC): each gets its own base."""
    base: int = LEARNER_UID_BASE.get()
    return base + middle_pid


def drop_root(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the effective and permitted capability sets


def drop_all(libc: Libc, uid: int | None) -> None:
    """Every capability gone: the bounding set (while CAP_SETPCAP is still held), then the uid (as root:
    that empties the effective and permitted sets), then whatever is left."""
    libc.drop_bounding_set()
    if uid is not None:
        drop_root(uid)
    libc.drop_capabilities()


def signal_uid(uid: int, sig: int) -> None:
    """Signal every process of `uid`: a helper takes that uid and signals everything it may signal (-1).
    Called in the jail's zygote, which never held anything the confined processes must not read."""
    helper = os.fork()
    if helper == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            drop_root(uid)
            os.kill(-1, sig)  # never the caller itself
            code = 0
        except BaseException:  # noqa: BLE001 - a forked helper must reach os._exit whatever happens
            pass
        os._exit(code)
    os.waitpid(helper, 0)
