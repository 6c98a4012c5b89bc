"""New user, PID, network, mount, IPC and UTS namespaces: no network, no host processes, no System V IPC
shared with the host, and everything the confined process starts dies with it (it is pid 1 of its own
PID namespace)."""
from __future__ import annotations

import fcntl
import os
import socket
import struct
from pathlib import Path

from sandbox.jail.libc import Libc

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
ALL = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS


def flags(as_root: bool) -> int:
    """What `enter` unshares: as root, a user namespace is not needed (a fresh uid does its job)."""
    return ALL if as_root else ALL | CLONE_NEWUSER


def enter(libc: Libc, as_root: bool) -> None:
    """Unshare every namespace (the next child is pid 1 of the new PID namespace) and bring up its loopback.
    OSError when this host does not allow it."""
    uid, gid = os.getuid(), os.getgid()
    libc.unshare(flags(as_root))
    if not as_root:
        map_own_ids(uid, gid)
    loopback_up()


def lock_mounts(libc: Libc) -> None:
    """Not as root: a user namespace owned by the first one, so the mounts made in the first (the view)
    become locked: they cannot be unmounted to reveal what they cover. Its capabilities are dropped next."""
    uid, gid = os.getuid(), os.getgid()
    libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)
    map_own_ids(uid, gid)


def map_own_ids(uid: int, gid: int) -> None:
    """In a new user namespace: map our own uid and gid to themselves (no setgroups)."""
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def loopback_up() -> None:
    """Bring up the new network namespace's own loopback, as Docker does for a container without a network:
    the confined processes can then talk to each other over 127.0.0.1 (torch.distributed's gloo needs an
    interface with an address, even with a file:// store), and nothing outside the namespace is reachable
    through it. Run while the namespace's capabilities are still held; on failure the loopback stays down."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            request = struct.pack("16sH22x", b"lo", 0)  # struct ifreq: name, then flags; 40 bytes
            current = struct.unpack("16sH22x", fcntl.ioctl(s, siocgifflags, request))[1]
            fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", current | iff_up))
    except OSError:
        pass
