"""The learner's file system: a minimal root built for it, not the host's with parts covered.

Inside its own mount namespace the learner's process gets a fresh tmpfs as `/`, holding only:

    read-only binds   /usr (and /bin, /lib... as the host has them), /etc/ld.so.cache, the Python
                      installation and the virtualenv that run this process, their site-packages,
                      the packages the caller names (for grading: `grader` and `sandbox`)
    /dev              null, zero, full, random, urandom; a small tmpfs /dev/shm
    /proc             its own, of its own PID namespace
    /tmp              a private, size-limited tmpfs (its working directory and home)

and nothing else (a `masked` folder of those shows empty: the grading side's correct runs,
grader/reference/): no repository, `.git` or exercises (solutions, hidden checks), no /var (build
caches), no home directories, no web instance folder (database, secret key), no Docker socket, no
/sys. Then `pivot_root` makes that tmpfs the root and the host's old root is detached.

The sources are cloned as detached mounts (open_tree) *before* anything is mounted, so a checkout
under /tmp works: mounting the new root's tmpfs over /tmp hides nothing the view still needs.
The probe and the scenario are loaded before the view is entered: the exercise folder is not in it.
"""
from __future__ import annotations

import ctypes
import os
import platform
import site
import sys
from dataclasses import dataclass
from pathlib import Path

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
MNT_DETACH = 2
# open_tree, move_mount and mount_setattr have one number on x86_64 and arm64 (the generic table).
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
DEVICES = ("null", "zero", "full", "random", "urandom")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache",)  # where the dynamic loader finds multiarch libraries


class ViewError(OSError):
    """The view could not be built: the learner's code must not run."""


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _check(rc: int, what: str) -> int:
    if rc < 0:
        err = ctypes.get_errno()
        raise ViewError(err, f"{what}: {os.strerror(err)}")
    return rc


def _syscall(number: int, *args: object) -> int:
    rc: int = _libc.syscall(ctypes.c_long(number), *args)
    return rc


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(value: str | None) -> bytes | None:
        return value.encode() if value is not None else None

    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _clone_read_only(path: str) -> int:
    """A detached, recursive, read-only, nosuid, nodev copy of the mount tree at `path`."""
    fd = _check(_syscall(SYS_OPEN_TREE, ctypes.c_long(AT_FDCWD), path.encode(),
                         ctypes.c_long(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)), f"open_tree {path}")
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
    _check(_syscall(SYS_MOUNT_SETATTR, ctypes.c_long(fd), b"", ctypes.c_long(AT_EMPTY_PATH | AT_RECURSIVE),
                    ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")
    return fd


def _clone(path: str) -> int:
    return _check(_syscall(SYS_OPEN_TREE, ctypes.c_long(AT_FDCWD), path.encode(),
                           ctypes.c_long(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)), f"open_tree {path}")


def _move(fd: int, target: str) -> None:
    _check(_syscall(SYS_MOVE_MOUNT, ctypes.c_long(fd), b"", ctypes.c_long(AT_FDCWD), target.encode(),
                    ctypes.c_long(MOVE_MOUNT_F_EMPTY_PATH)), f"move_mount {target}")


@dataclass(frozen=True)
class View:
    """What the learner's root holds: read-only `sources`, and `forbidden` paths none may contain;
    `masked`: folders inside a source that the view shows empty (an empty read-only tmpfs over each)."""
    sources: tuple[Path, ...]
    forbidden: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()

    def problems(self) -> list[str]:
        """Sources that would show a forbidden path (say, a virtualenv made inside the course folder), and
        masked folders that are no folder inside a source (a mask over nothing would hide nothing)."""
        found = [f"{source} would show {path} to learner code: install the Python environment "
                 f"outside it" for source in self.sources for path in self.forbidden
                 if path == source or source in path.parents]
        found += [f"{path} cannot be masked in the learner's view: it is no folder inside what the view shows"
                  for path in self.masked
                  if not path.is_dir() or not any(source in path.parents for source in self.sources)]
        return found


def interpreter_view(packages: list[Path], forbidden: list[Path], masked: list[Path] | None = None) -> View:
    """This interpreter, its installation and site-packages, and the package folders `packages` (the code
    the confined process runs besides the standard library): found from this process. `masked`: folders
    of those that the view shows empty."""
    dirs = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages())}
    # Site directories added by .pth files (a system interpreter borrowing a virtualenv's packages).
    dirs |= {Path(p).resolve() for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    dirs |= {Path(p).resolve() for p in packages}
    dirs = {d for d in dirs if d.is_dir() and d != Path("/")}
    system = {Path(p) for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)}
    outermost = sorted(d for d in dirs | system if not any(o in d.parents for o in dirs | system))
    return View(tuple(outermost), tuple(p.resolve() for p in forbidden if p.exists()),
                tuple(Path(p).resolve() for p in masked or ()))


def enter(view: View, scratch_mb: int, owner: int | None) -> None:
    """Replace this process's root with the view (in a private mount namespace, as pid 1 of a PID
    namespace, before any learner code). `owner`: the uid that gets /tmp (when dropping from root)."""
    if SYS_PIVOT_ROOT is None:
        raise ViewError(0, f"pivot_root: unknown syscall number on {platform.machine()}")
    if view.problems():
        raise ViewError(0, view.problems()[0])
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    binds = [(str(source), _clone_read_only(str(source))) for source in view.sources]
    files = [(path, _clone_read_only(path)) for path in SYSTEM_FILES if os.path.isfile(path)]
    devices = [(f"/dev/{name}", _clone(f"/dev/{name}")) for name in DEVICES if os.path.exists(f"/dev/{name}")]
    links = {path: os.readlink(path) for path in SYSTEM_DIRS if os.path.islink(path)}
    new = "/tmp"  # any directory: this mount namespace is ours alone, and the sources are already held
    mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    try:
        # /tmp first: a source under /tmp (a checkout there) is then mounted inside the learner's scratch.
        os.makedirs(new + "/tmp")
        owned = f",uid={owner},gid={owner}" if owner is not None else ""
        mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=0700{owned}")
        for path, fd in binds:
            os.makedirs(new + path, exist_ok=True)
            _move(fd, new + path)
        for path, fd in files:
            os.makedirs(os.path.dirname(new + path), exist_ok=True)
            open(new + path, "w").close()
            _move(fd, new + path)
        for path, target in links.items():
            os.symlink(target, new + path)
        os.makedirs(new + "/dev")
        mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
        for path, fd in devices:
            open(new + path, "w").close()
            _move(fd, new + path)
        os.makedirs(new + "/dev/shm")
        mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16m,mode=1777")
        for mask in view.masked:  # after the binds: an empty tmpfs over the folder, read-only
            mount("tmpfs", new + str(mask), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
        os.makedirs(new + "/proc")
        mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        os.makedirs(new + "/.oldroot")
        _check(_syscall(SYS_PIVOT_ROOT, new.encode(), (new + "/.oldroot").encode()), "pivot_root")
    finally:
        for _, fd in binds + files + devices:
            os.close(fd)
    os.chdir("/")
    _check(_libc.umount2(b"/.oldroot", MNT_DETACH), "umount /.oldroot")
    os.rmdir("/.oldroot")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir("/tmp")
