"""A seccomp filter for the learner's process, loaded right before learner code runs.

Namespaces, the uid drop and rlimits (namespaces.py, identity.py, rlimits.py) decide what the learner's
process can see and touch. This filter shrinks the part of the kernel it can reach. It is a deny list: the default
action is allow, because learner code is ordinary Python, torch and numpy, and an allow list exact
enough for that stack would break with every new torch release. A denied call fails with EPERM,
just as it would for an unprivileged user, so libraries take their usual "not permitted" path
instead of crashing.

Denied outright (`DENIED` gives a one-line reason for each name):

  * Reaching into other processes: ptrace, process_vm_readv, process_vm_writev, kcmp, pidfd_getfd,
    process_madvise. The learner must not attach to the grader, or to another learner's process,
    even where a uid or PID namespace is missing.
  * Mounts and namespaces: mount, umount2, pivot_root, chroot, the new mount API (open_tree,
    move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr), unshare and setns. The harness
    sets up the child's file system view before the filter is loaded, and the learner cannot
    rebuild it. Above all, the learner cannot create a user namespace. A user namespace grants
    CAP_SYS_ADMIN over its own mounts and network stack, and it has been the entry point for most
    kernel privilege-escalation bugs of the last decade.
  * Large, bug-prone kernel interfaces that no exercise needs: bpf, perf_event_open, userfaultfd
    (used to win kernel race conditions), io_uring_setup, io_uring_enter and io_uring_register
    (io_uring opens, reads and connects without going through the syscall entry, so no seccomp
    filter ever sees those operations), and keyctl, add_key, request_key (the kernel keyring is
    not namespaced).
  * File handles: open_by_handle_at opens any inode from a guessable handle, skipping directory
    permissions and mount boundaries (the 2014 "shocker" Docker escape). name_to_handle_at is the
    half that produces handles.
  * Whole-machine administration: reboot, kexec_load, kexec_file_load, init_module, finit_module,
    delete_module, create_module, get_kernel_syms, query_module, swapon, swapoff, acct, syslog,
    quotactl, quotactl_fd, lookup_dcookie, vhangup, settimeofday, clock_settime, clock_adjtime,
    adjtimex, sethostname, setdomainname, iopl, ioperm, and the obsolete uselib, nfsservctl and
    _sysctl. The kernel already refuses most of these to a non-root user; the filter is a second
    line for a learner's process that keeps a privilege it should not have.

Denied by argument (`RESTRICTED`):

  * clone with a namespace flag (CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET,
    CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP) fails with EPERM. fork, vfork (subprocess) and
    threads are not affected. CLONE_NEWTIME exists only for unshare and clone3, which are blocked.
  * clone3 always fails with ENOSYS. Its flags live in a struct in memory, which a seccomp filter
    cannot read, so clone3 cannot be filtered by flag. On ENOSYS, glibc falls back to clone,
    which is filtered. Docker's and Flatpak's profiles use the same approach.
  * ioctl TIOCSTI (push characters into a terminal's input, i.e. type commands into the shell
    that owns the terminal) and TIOCLINUX (the same through the Linux console's selection) fail
    with EPERM. The filter compares only the low 32 bits of the request, because the kernel reads
    only those (Flatpak's CVE-2019-10063 was a filter that compared all 64 bits).
  * personality: only the query, personality(0xffffffff), is allowed. Setting a persona fails with
    EPERM. Docker also allows setting the default personas (PER_LINUX, PER_LINUX32, UNAME26), but
    libseccomp cannot compare one argument against several values in a single rule, and nothing
    in the Python stack sets a persona. A persona can turn off ASLR for the programs the learner
    runs next (ADDR_NO_RANDOMIZE) or make every readable mapping executable (READ_IMPLIES_EXEC).
  * prctl(PR_SET_DUMPABLE) fails with EPERM. The jail makes every confined process non-dumpable, so its
    /proc files are root's: no process of its uid may trace it or open its memory (a grading-side helper
    beside it stays out of reach), and where no cgroup is readable it cannot reset the peak resident set
    (/proc/self/clear_refs) that the fallback memory meter reads (meter.py).

A syscall made through another architecture's table (int 0x80 or x32 on x86_64, 32-bit compat on
aarch64) kills the process. A deny list written in native syscall numbers does not cover those
tables.

Not filtered, on purpose: socket(AF_NETLINK, ...). In the child's network namespace (or in the
grading container, which has no network) netlink shows only the loopback device. The netlink
operations that change anything need CAP_NET_ADMIN in a user namespace the learner can no longer
create. And glibc's getifaddrs() and if_nameindex(), which torch.distributed and psutil use, need
NETLINK_ROUTE.

Limits: a deny list blocks only what it names. A syscall newer than this list, or unknown to the
system's libseccomp, is allowed. Names that libseccomp cannot resolve are skipped rather than
treated as errors. The filter is inherited by every thread and child process and cannot be
removed. install() sets no_new_privs first: that is what allows an unprivileged process to load a
filter, and it also keeps setuid binaries from gaining privileges.
"""
from __future__ import annotations

import ctypes
import errno
import os

__all__ = ["DENIED", "RESTRICTED", "SeccompUnavailable", "available", "install", "syscall_number"]

LIBRARY = "libseccomp.so.2"  # Debian package libseccomp2 (apt depends on it, so images have it)

DENIED: dict[str, str] = {
    # other processes
    "ptrace": "attach to, read and steer another process (the grader, another learner)",
    "process_vm_readv": "read another process's memory",
    "process_vm_writev": "write another process's memory",
    "kcmp": "compare kernel objects of other processes (a ptrace-class probe)",
    "pidfd_getfd": "steal a file descriptor from another process",
    "process_madvise": "advise on (e.g. page out) another process's memory",
    # mounts and namespaces
    "mount": "change the file system view the harness built",
    "umount2": "uncover what the harness mounted over (exercises, home directories)",
    "pivot_root": "swap the root file system",
    "chroot": "change the root directory (a classic escape with an open directory fd)",
    "open_tree": "clone a mount tree (new mount API)",
    "move_mount": "attach a mount tree (new mount API)",
    "fsopen": "create a file system context (new mount API)",
    "fsconfig": "configure a file system context (new mount API)",
    "fsmount": "turn a file system context into a mount (new mount API)",
    "fspick": "reconfigure an existing mount (new mount API)",
    "mount_setattr": "change mount flags such as read-only or nosuid",
    "unshare": "create namespaces, above all user namespaces, the usual first step of kernel exploits",
    "setns": "join another process's namespaces (e.g. the grader's via /proc/PID/ns)",
    # large kernel attack surface that no exercise needs
    "bpf": "load programs into the kernel (verifier bugs are a common escalation path)",
    "perf_event_open": "observe the CPU and other processes; long CVE record",
    "userfaultfd": "stall the kernel on page faults, used to win kernel race conditions",
    "io_uring_setup": "io_uring runs opens, reads and connects that no seccomp filter sees",
    "io_uring_enter": "io_uring runs opens, reads and connects that no seccomp filter sees",
    "io_uring_register": "io_uring runs opens, reads and connects that no seccomp filter sees",
    "keyctl": "the kernel keyring is not namespaced",
    "add_key": "the kernel keyring is not namespaced",
    "request_key": "the kernel keyring is not namespaced",
    # file handles
    "open_by_handle_at": "open any inode by handle, bypassing directories and mounts ('shocker')",
    "name_to_handle_at": "produce the handles open_by_handle_at consumes",
    # whole-machine administration
    "reboot": "reboot or halt the machine",
    "kexec_load": "replace the running kernel",
    "kexec_file_load": "replace the running kernel",
    "init_module": "load a kernel module",
    "finit_module": "load a kernel module",
    "delete_module": "unload a kernel module",
    "create_module": "load a kernel module (obsolete)",
    "get_kernel_syms": "list kernel symbols (obsolete)",
    "query_module": "query kernel modules (obsolete)",
    "swapon": "add swap to the machine",
    "swapoff": "remove swap from the machine",
    "acct": "switch process accounting for the whole machine",
    "syslog": "read or clear the kernel log (kernel addresses, other users' messages)",
    "quotactl": "administer disk quotas",
    "quotactl_fd": "administer disk quotas",
    "lookup_dcookie": "resolve kernel directory cookies (profiling leftover, leaks paths)",
    "vhangup": "hang up the current terminal",
    "settimeofday": "set the machine's clock, shared by every process",
    "clock_settime": "set the machine's clock, shared by every process",
    "clock_adjtime": "adjust the machine's clock, shared by every process",
    "adjtimex": "adjust the machine's clock, shared by every process",
    "sethostname": "rename the host (or the UTS namespace)",
    "setdomainname": "rename the NIS domain",
    "iopl": "raw access to hardware I/O ports",
    "ioperm": "raw access to hardware I/O ports",
    "uselib": "load a library the a.out way (obsolete, old CVEs)",
    "nfsservctl": "control the kernel NFS server (obsolete)",
    "_sysctl": "change kernel parameters (obsolete)",
}

RESTRICTED: dict[str, str] = {
    "clone": "EPERM when any namespace flag (CLONE_NEWUSER, NEWNS, NEWPID, NEWNET, NEWIPC, NEWUTS, "
             "NEWCGROUP) is set; fork, vfork and threads are unaffected",
    "clone3": "always ENOSYS: its flags are in memory a filter cannot read; glibc falls back to clone",
    "ioctl": "EPERM for TIOCSTI and TIOCLINUX (typing into a terminal), compared on the low 32 bits",
    "personality": "EPERM unless it is the query personality(0xffffffff): no ASLR-off or exec-all personas",
    "prctl": "EPERM for PR_SET_DUMPABLE: a process the jail made non-dumpable stays so (its /proc files, "
             "its memory and /proc/self/clear_refs stay root's)",
}

CLONE_NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
TIOCSTI, TIOCLINUX = 0x5412, 0x541C  # the same on x86_64 and aarch64
PERSONALITY_QUERY = 0xFFFFFFFF

PR_SET_DUMPABLE, PR_GET_SECCOMP, PR_SET_NO_NEW_PRIVS = 4, 21, 38

# libseccomp's ABI (seccomp.h), stable since 2.x.
_ACT_ALLOW = 0x7FFF0000
_ACT_KILL_PROCESS = 0x80000000
_ATTR_ACT_BADARCH, _ATTR_CTL_TSYNC, _ATTR_API_SYSRAWRC = 2, 4, 9
_CMP_NE, _CMP_EQ, _CMP_MASKED_EQ = 1, 4, 7


def _act_errno(err: int) -> int:
    return 0x00050000 | (err & 0xFFFF)


class SeccompUnavailable(Exception):
    """The filter could not be installed; the message says what is missing."""


class _ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp: syscall argument `arg` compared by `op`; MASKED_EQ: (arg & a) == b."""
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]


_lib: ctypes.CDLL | None = None


def _libseccomp() -> ctypes.CDLL:
    """The system's libseccomp, loaded once: a grader that calls available() before it forks spares
    each child the dlopen."""
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL(LIBRARY)
            lib.seccomp_init.argtypes = [ctypes.c_uint32]
            lib.seccomp_init.restype = ctypes.c_void_p
            lib.seccomp_release.argtypes = [ctypes.c_void_p]
            lib.seccomp_release.restype = None
            lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
            lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                                   ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
            lib.seccomp_load.argtypes = [ctypes.c_void_p]
            lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
            lib.seccomp_version.restype = ctypes.POINTER(_Version)
            lib.seccomp_api_get.restype = ctypes.c_uint
        except OSError as exc:
            raise SeccompUnavailable(f"{LIBRARY} not found (Debian package libseccomp2): {exc}") from None
        except AttributeError as exc:  # a libseccomp older than 2.3
            raise SeccompUnavailable(f"{LIBRARY} is too old: {exc}") from None
        _lib = lib
    return _lib


def syscall_number(name: str) -> int | None:
    """The native syscall number of `name`, or None when libseccomp knows no such call on this
    architecture (it then answers __NR_SCMP_ERROR, -1, or a negative pseudo-number)."""
    number = _libseccomp().seccomp_syscall_resolve_name(name.encode())
    return number if number >= 0 else None


def _rules() -> list[tuple[str, int, list[_ArgCmp]]]:
    """(syscall, action, argument comparisons, all of which must hold) for every rule."""
    eperm = _act_errno(errno.EPERM)
    rules: list[tuple[str, int, list[_ArgCmp]]] = [(name, eperm, []) for name in DENIED]
    # One rule per flag: libseccomp ORs rules, and a rule cannot test one argument twice.
    rules += [("clone", eperm, [_ArgCmp(0, _CMP_MASKED_EQ, flag, flag)])
              for flag in CLONE_NAMESPACE_FLAGS.values()]
    rules.append(("clone3", _act_errno(errno.ENOSYS), []))
    rules += [("ioctl", eperm, [_ArgCmp(1, _CMP_MASKED_EQ, 0xFFFFFFFF, request)])
              for request in (TIOCSTI, TIOCLINUX)]
    rules.append(("personality", eperm, [_ArgCmp(0, _CMP_NE, PERSONALITY_QUERY, 0)]))
    rules.append(("prctl", eperm, [_ArgCmp(0, _CMP_EQ, PR_SET_DUMPABLE, 0)]))
    return rules


def available() -> tuple[bool, str]:
    """Whether install() can work here, and why (not), without installing anything."""
    try:
        lib = _libseccomp()
    except SeccompUnavailable as exc:
        return False, str(exc)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return False, f"kernel without seccomp: prctl(PR_GET_SECCOMP): {os.strerror(ctypes.get_errno())}"
    version = lib.seccomp_version().contents
    return True, (f"libseccomp {version.major}.{version.minor}.{version.micro}, "
                  f"API level {lib.seccomp_api_get()}")


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0  # unknown: treated as "more than one" by the caller


def install() -> None:
    """Set no_new_privs and load the filter into every thread of this process, for good.

    Raises SeccompUnavailable when the library is missing, the kernel lacks seccomp, or the kernel
    refuses the filter. The filter loads in one step, so it is never half-installed (no_new_privs
    may already be set by then)."""
    ok, why = available()
    if not ok:
        raise SeccompUnavailable(why)
    lib = _libseccomp()
    libc = ctypes.CDLL(None, use_errno=True)
    # Without no_new_privs the kernel lets only CAP_SYS_ADMIN load a filter.
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 0:
        raise SeccompUnavailable(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed (out of memory?)")
    try:
        lib.seccomp_attr_set(ctx, _ATTR_API_SYSRAWRC, 1)  # load errors carry the kernel's errno (2.5+)
        lib.seccomp_attr_set(ctx, _ATTR_ACT_BADARCH, _ACT_KILL_PROCESS)  # else libseccomp kills the thread
        if lib.seccomp_attr_set(ctx, _ATTR_CTL_TSYNC, 1) != 0 and _thread_count() != 1:
            # A thread started earlier (an OpenMP pool) would stay unfiltered.
            raise SeccompUnavailable("libseccomp or the kernel cannot sync the filter to all threads "
                                     "(SCMP_FLTATR_CTL_TSYNC) and this process has several")
        for name, action, comparisons in _rules():
            number = syscall_number(name)
            if number is None:
                continue  # not on this architecture, or newer than this libseccomp
            array = (_ArgCmp * len(comparisons))(*comparisons) if comparisons else None
            rc = lib.seccomp_rule_add_array(ctx, action, number, len(comparisons), array)
            if rc < 0:
                raise SeccompUnavailable(f"seccomp_rule_add({name}): {os.strerror(-rc)}")
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise SeccompUnavailable(f"seccomp_load: the kernel refused the filter: "
                                     f"{errno.errorcode.get(-rc, -rc)} ({os.strerror(-rc)})")
    finally:
        lib.seccomp_release(ctx)
