"""The few libc calls the jail needs that Python's os module lacks: unshare, prctl, capset."""
from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 1, 4, 24, 47, 4
EXIT_PARENT_GONE = 70


class Libc:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL(None, use_errno=True)

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def unshare(self, flags: int) -> None:
        self._check(self.lib.unshare(flags), "unshare")

    def prctl(self, option: int, arg: int = 0) -> None:
        self._check(self.lib.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")

    def die_with_parent(self, expected_parent: int) -> None:
        """SIGKILL this process when its parent dies (a process stopped at a deadline must not leave its
        children running). Cleared by a uid change: call it after dropping privileges."""
        self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != expected_parent:  # the parent died before the call
            os._exit(EXIT_PARENT_GONE)

    def drop_bounding_set(self) -> None:
        """No capability can be gained again, even by exec (needs CAP_SETPCAP: call it first)."""
        for cap in range(64):
            if self.lib.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0 and ctypes.get_errno() == 22:
                break  # EINVAL: past the last capability this kernel knows
        self.lib.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)

    def drop_capabilities(self) -> None:
        """Empty the effective, permitted and inheritable sets."""
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()  # two all-zero {effective, permitted, inheritable} triples
        self._check(self.lib.capset(header, data), "capset")
