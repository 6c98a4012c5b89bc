"""The learner's seccomp filter (grader/harness/seccomp.py).

The filter is never loaded into the pytest process: each test loads it in a forked child, which
reports back as JSON through a pipe, or in a fresh interpreter. The forked children run no torch
(a fork of a multithreaded parent can deadlock there). Torch runs under the filter in a fresh
subprocess only. Most checks also run the same call without the filter, which shows that the test
would notice a missing rule.
"""
from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import platform
import resource
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import pytest

from sandbox.jail import seccomp
from tests.support.paths import REPO

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long

CLONE_THREAD = 0x00010000  # without CLONE_SIGHAND the kernel refuses it (EINVAL): nothing is created
CLONE_NEWUSER = seccomp.CLONE_NAMESPACE_FLAGS["CLONE_NEWUSER"]
FIONREAD = 0x541B
ADDR_NO_RANDOMIZE = 0x0040000


def _seccomp_possible() -> bool:
    try:
        ctypes.CDLL(seccomp.LIBRARY)
    except OSError:
        return False
    return LIBC.prctl(seccomp.PR_GET_SECCOMP, 0, 0, 0, 0) >= 0


pytestmark = pytest.mark.skipif(not _seccomp_possible(), reason="no libseccomp.so.2 or no kernel seccomp")


def nr(name: str) -> int:
    number = seccomp.syscall_number(name)
    assert number is not None, name
    return number


def raw(number: int, *args: int) -> tuple[int, int]:
    """(return value, errno) of a raw syscall: no libc wrapper checks or rewrites the arguments."""
    ctypes.set_errno(0)
    rc = LIBC.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    return rc, (ctypes.get_errno() if rc == -1 else 0)


def err(number: int, *args: int) -> int:
    return raw(number, *args)[1]


def proc_status() -> dict[str, str]:
    lines = Path("/proc/self/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)
            if k in ("NoNewPrivs", "Seccomp", "Seccomp_filters")}


def fork_run(body: Callable[[], Any], *, filtered: bool, timeout: float = 20) -> tuple[int, bytes]:
    """Run body() in a forked child (after install() when `filtered`): (wait status, what it wrote).
    The child writes body()'s result as JSON, or a traceback and exits 1; it never returns here."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            os.setsid()  # no controlling terminal: vhangup or TIOCSTI cannot touch the test's terminal
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGSYS would dump core
            if filtered:
                seccomp.install()
            os.write(write, json.dumps(body()).encode())
            code = 0
        except BaseException:  # noqa: BLE001 - the forked child reports any failure to the test
            os.write(write, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(write)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
    return os.waitpid(pid, 0)[1], b"".join(chunks)


def in_child(body: Callable[[], Any], *, filtered: bool) -> Any:
    status, out = fork_run(body, filtered=filtered)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, out.decode(errors="replace"))
    return json.loads(out)


# harmless arguments: every call fails on them (EINVAL, EFAULT, EBADF, ESRCH, ENOSYS) even as root
# without the filter, so a missing rule cannot do damage; with the filter every one is EPERM.
ARGS = {"init_module": (0, 0, 0)}  # a length of -1 would make the kernel try a huge allocation
CONTROLS = {"ptrace": errno.ESRCH, "setns": errno.EBADF, "unshare": errno.EINVAL,
            "process_vm_readv": errno.EINVAL}  # unfiltered results that need no privilege


def call_denied() -> dict[str, int]:
    return {name: err(number, *ARGS.get(name, (-1,) * 6))
            for name in seccomp.DENIED if (number := seccomp.syscall_number(name)) is not None}


def test_the_deny_list_covers_the_documented_names():
    required = """ptrace process_vm_readv process_vm_writev mount umount2 pivot_root chroot move_mount
        open_tree fsopen fsmount fsconfig fspick mount_setattr unshare setns keyctl add_key request_key
        bpf perf_event_open userfaultfd kexec_load kexec_file_load init_module finit_module
        delete_module reboot swapon swapoff acct open_by_handle_at name_to_handle_at io_uring_setup
        io_uring_enter io_uring_register syslog quotactl lookup_dcookie vhangup settimeofday
        clock_settime clock_adjtime adjtimex sethostname setdomainname iopl ioperm create_module""".split()
    assert set(required) <= set(seccomp.DENIED)
    assert set(seccomp.RESTRICTED) == {"clone", "clone3", "ioctl", "personality", "prctl"}
    assert not set(seccomp.DENIED) & set(seccomp.RESTRICTED)
    doc = seccomp.__doc__
    for name, reason in {**seccomp.DENIED, **seccomp.RESTRICTED}.items():
        assert reason.strip() and "\n" not in reason, name
        assert name in doc, f"{name} is not in the module docstring (quoted in docs/sandbox.md)"


def test_syscall_numbers_come_from_libseccomp():
    expected = {"x86_64": {"ptrace": 101, "clone3": 435, "personality": 135},
                "aarch64": {"ptrace": 117, "clone3": 435, "personality": 92}}.get(platform.machine(), {})
    for name, number in expected.items():
        assert seccomp.syscall_number(name) == number
    assert seccomp.syscall_number("no_such_syscall") is None
    if platform.machine() == "x86_64":
        assert seccomp.syscall_number("socketcall") is None  # i386 only: a negative pseudo-number
    core = ["ptrace", "mount", "unshare", "setns", "bpf", "keyctl", "io_uring_setup", "open_by_handle_at"]
    assert all(seccomp.syscall_number(name) is not None for name in core)


def test_available_says_yes_and_installs_nothing():
    def body() -> list[dict[str, str]]:
        before = proc_status()
        ok, why = seccomp.available()
        assert ok, why
        assert "libseccomp" in why
        return [before, proc_status()]

    before, after = in_child(body, filtered=False)
    assert before == after


def test_install_sets_no_new_privs_and_filter_mode():
    def body() -> list[dict[str, str]]:
        before = proc_status()
        seccomp.install()
        return [before, proc_status()]

    before, after = in_child(body, filtered=False)
    assert before["NoNewPrivs"] == "0" and after["NoNewPrivs"] == "1"
    assert after["Seccomp"] == "2"
    if "Seccomp_filters" in after:
        assert int(after["Seccomp_filters"]) == int(before["Seccomp_filters"]) + 1


def test_every_denied_syscall_gets_eperm_and_would_not_without_the_filter():
    unfiltered = in_child(call_denied, filtered=False)
    filtered = in_child(call_denied, filtered=True)
    assert set(filtered) == set(unfiltered) and len(filtered) >= len(seccomp.DENIED) - 5
    assert {name: e for name, e in filtered.items() if e != errno.EPERM} == {}
    for name, expected in CONTROLS.items():
        assert unfiltered[name] == expected, (name, errno.errorcode.get(unfiltered[name]))


def test_clone_with_a_namespace_flag_is_refused_but_fork_and_threads_work():
    def body() -> dict[str, Any]:
        clone = nr("clone")
        out: dict[str, Any] = {name: err(clone, flag | CLONE_THREAD, 0, 0, 0, 0)
                               for name, flag in seccomp.CLONE_NAMESPACE_FLAGS.items()}
        rc, out["real_newuser"] = raw(clone, CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0)
        if rc == 0:  # only without the filter: the new process leaves at once
            os._exit(0)
        if rc > 0:
            os.waitpid(rc, 0)
        out["libc_unshare"] = 0 if LIBC.unshare(CLONE_NEWUSER) == 0 else ctypes.get_errno()
        if hasattr(os, "unshare"):  # Python 3.12+
            try:
                os.unshare(CLONE_NEWUSER)
                out["os_unshare"] = 0
            except OSError as exc:
                out["os_unshare"] = exc.errno
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        out["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(threading.get_native_id()))
        thread.start()
        thread.join()
        out["thread"] = bool(seen) and seen[0] != threading.get_native_id()
        return out

    unfiltered = in_child(body, filtered=False)
    filtered = in_child(body, filtered=True)
    for name in seccomp.CLONE_NAMESPACE_FLAGS:
        assert unfiltered[name] == errno.EINVAL, name  # the kernel's own refusal, after the filter's
        assert filtered[name] == errno.EPERM, name
    assert filtered["real_newuser"] == errno.EPERM
    assert filtered["libc_unshare"] == errno.EPERM and filtered.get("os_unshare", errno.EPERM) == errno.EPERM
    assert filtered["fork"] == 7 and filtered["thread"] is True


def test_clone3_is_enosys_so_glibc_falls_back_to_clone():
    def body() -> int:
        return err(nr("clone3"), 0, 0)  # a NULL struct of size 0: EINVAL from the kernel

    assert in_child(body, filtered=False) == errno.EINVAL
    assert in_child(body, filtered=True) == errno.ENOSYS


def test_terminal_injection_ioctls_are_refused_even_with_high_bits_set():
    def body() -> dict[str, Any]:
        ioctl = nr("ioctl")
        read, _ = os.pipe()
        master, slave = os.openpty()
        count = ctypes.c_int(-1)
        return {
            "tiocsti": err(ioctl, read, seccomp.TIOCSTI, 0),
            "tiocsti_high": err(ioctl, read, (1 << 32) | seccomp.TIOCSTI, 0),  # the kernel drops bit 32
            "tioclinux": err(ioctl, read, seccomp.TIOCLINUX, 0),
            "tiocsti_pty": err(ioctl, slave, seccomp.TIOCSTI, 0),  # NULL char: EFAULT, nothing typed
            "fionread": err(ioctl, read, FIONREAD, ctypes.addressof(count)),
            "count": count.value,
        }

    unfiltered = in_child(body, filtered=False)
    filtered = in_child(body, filtered=True)
    assert unfiltered["tiocsti"] == unfiltered["tiocsti_high"] == errno.ENOTTY
    assert filtered["tiocsti"] == filtered["tiocsti_high"] == filtered["tioclinux"] == errno.EPERM
    assert filtered["tiocsti_pty"] == errno.EPERM
    assert filtered["fionread"] == 0 and filtered["count"] == 0  # other ioctls still work


def test_personality_can_be_queried_but_not_set():
    def body() -> dict[str, Any]:
        personality = nr("personality")
        return {"query": list(raw(personality, seccomp.PERSONALITY_QUERY)),
                "no_aslr": err(personality, ADDR_NO_RANDOMIZE),
                "default": err(personality, 0),  # refused too: one rule cannot allow two values
                "query_after": list(raw(personality, seccomp.PERSONALITY_QUERY))}

    unfiltered = in_child(body, filtered=False)
    filtered = in_child(body, filtered=True)
    assert unfiltered["no_aslr"] == 0 and unfiltered["default"] == 0
    assert filtered["query"] == [0, 0] and filtered["default"] == errno.EPERM
    assert filtered["no_aslr"] == errno.EPERM and filtered["query_after"] == [0, 0]


def test_a_process_cannot_make_itself_dumpable_again():
    """The container's memory meter (wait4's peak resident set) relies on it: a dumpable process could
    reset that peak through /proc/self/clear_refs."""
    def body() -> dict[str, Any]:
        prctl = nr("prctl")
        return {"get": err(prctl, 3), "set": err(prctl, seccomp.PR_SET_DUMPABLE, 1),
                "other": err(prctl, 15, 0)}  # PR_SET_NAME with a NULL name: EFAULT, not EPERM

    unfiltered = in_child(body, filtered=False)
    filtered = in_child(body, filtered=True)
    assert unfiltered["set"] == 0 and filtered["set"] == errno.EPERM
    assert filtered["other"] != errno.EPERM


def _int80_getpid() -> int:
    """getpid through the i386 entry (int 0x80): mov eax, 20; int 0x80; ret."""
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))
    return ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="i386 and x32 entries exist on x86_64")
@pytest.mark.parametrize("entry", ["int80", "x32"])
def test_syscalls_through_another_architecture_kill_the_process(entry):
    def body() -> bool:
        if entry == "int80":
            return _int80_getpid() == os.getpid()
        return err(0x40000000 | 39) in (0, errno.ENOSYS)  # x32 getpid; ENOSYS where x32 is compiled out

    status, out = fork_run(body, filtered=False)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and json.loads(out) is True):
        pytest.skip(f"no working {entry} entry here: wait status {status}, {out!r}")
    status, out = fork_run(body, filtered=True)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS, (status, out)


def test_threads_started_before_install_are_filtered_too():
    def body() -> dict[str, int]:
        go, seen = threading.Event(), {}

        def worker() -> None:
            go.wait()
            seen["ptrace"] = err(nr("ptrace"), -1, -1, 0, 0)

        thread = threading.Thread(target=worker)
        thread.start()
        seccomp.install()
        go.set()
        thread.join()
        return seen

    assert in_child(body, filtered=False) == {"ptrace": errno.EPERM}


def test_a_missing_library_raises_before_changing_anything(monkeypatch):
    monkeypatch.setattr(seccomp, "LIBRARY", "libseccomp-missing.so.9")
    monkeypatch.setattr(seccomp, "_lib", None)
    ok, why = seccomp.available()
    assert not ok and "libseccomp2" in why and "libseccomp-missing.so.9" in why

    def body() -> list[Any]:
        try:
            seccomp.install()
        except seccomp.SeccompUnavailable as exc:
            return [str(exc), proc_status()["NoNewPrivs"]]
        return ["installed", ""]

    message, no_new_privs = in_child(body, filtered=False)
    assert "libseccomp2" in message and no_new_privs == "0"


def test_a_refused_load_raises_with_the_kernel_errno():
    def body() -> str:
        # A filter already in place that refuses to load more filters, like a strict container.
        lib = seccomp._libseccomp()
        LIBC.prctl(seccomp.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        ctx = lib.seccomp_init(seccomp._ACT_ALLOW)
        eacces = seccomp._act_errno(errno.EACCES)
        assert lib.seccomp_rule_add_array(ctx, eacces, nr("seccomp"), 0, None) == 0
        set_seccomp = (seccomp._ArgCmp * 1)(seccomp._ArgCmp(0, 4, 22, 0))  # arg0 EQ PR_SET_SECCOMP
        assert lib.seccomp_rule_add_array(ctx, eacces, nr("prctl"), 1, set_seccomp) == 0
        assert lib.seccomp_load(ctx) == 0
        lib.seccomp_release(ctx)
        try:
            seccomp.install()
        except seccomp.SeccompUnavailable as exc:
            return str(exc)
        return "installed"

    message = in_child(body, filtered=False)
    assert "seccomp_load" in message and "EACCES" in message


def _script(body: str) -> str:
    return textwrap.dedent("""
        import ctypes, json, os, sys
        from sandbox.jail import seccomp
        LIBC = ctypes.CDLL(None, use_errno=True)
        LIBC.syscall.restype = ctypes.c_long
        def err(name, *args):
            rc = LIBC.syscall(ctypes.c_long(seccomp.syscall_number(name)), *(ctypes.c_long(a) for a in args))
            return ctypes.get_errno() if rc == -1 else 0
        def status():
            return dict(l.split(":\\t") for l in open("/proc/self/status").read().splitlines()
                        if l.startswith(("NoNewPrivs", "Seccomp:")))
        """) + textwrap.dedent(body)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                    reason="needs root to switch to nobody, setpriv and the system interpreter")
def test_installs_unprivileged_from_the_system_interpreter():
    script = _script("""
        before = status()
        seccomp.install()
        print(json.dumps({"uid": os.getuid(), "before": before, "after": status(),
                          "ptrace": err("ptrace", -1, -1, 0, 0), "clone3": err("clone3", 0, 0),
                          "unshare": err("unshare", seccomp.CLONE_NAMESPACE_FLAGS["CLONE_NEWUSER"]),
                          "keyctl": err("keyctl", -1, 0, 0, 0, 0)}))
        """)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           "/usr/bin/python3", "-B", "-c", script], capture_output=True, text=True, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}, timeout=30)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["uid"] == 65534
    assert out["before"]["NoNewPrivs"] == "0" and out["after"] == {"NoNewPrivs": "1", "Seccomp": "2"}
    assert out["ptrace"] == out["unshare"] == out["keyctl"] == errno.EPERM and out["clone3"] == errno.ENOSYS


def test_ordinary_python_and_torch_work_under_the_filter(tmp_path):
    script = _script("""
        import socket, subprocess, tempfile, threading
        import torch
        torch.set_num_threads(2)
        a = torch.randn(256, 256)
        (a @ a).sum()  # starts torch's thread pool: install() must reach those threads too
        seccomp.install()
        out = {"status": status(), "ptrace": err("ptrace", -1, -1, 0, 0)}
        out["matmul"] = float((torch.ones(64, 64) @ torch.ones(64, 64))[0, 0])
        out["pool"] = bool(torch.isfinite(a @ a).all())
        sums = []
        def work():
            sums.append(float((torch.ones(8, 8) @ torch.ones(8, 8)).sum()))
        threads = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        out["threads"] = sums
        out["true"] = subprocess.run(["/bin/true"]).returncode
        out["child_seccomp"] = subprocess.run(["grep", "^Seccomp:", "/proc/self/status"],
                                              capture_output=True, text=True).stdout.split()
        pid = os.fork()
        if pid == 0:
            os._exit(3)
        out["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        with tempfile.TemporaryDirectory(dir=".") as scratch:
            path = os.path.join(scratch, "f.txt")
            with open(path, "w") as f:
                f.write("hello")
            out["file"] = open(path).read()
        left, right = socket.socketpair()
        left.sendall(b"ping")
        out["socketpair"] = right.recv(4).decode()
        with torch.profiler.profile() as prof:
            torch.mm(a, a)
        out["profiler"] = any("mm" in e.name for e in prof.events())
        print(json.dumps(out))
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["status"] == {"NoNewPrivs": "1", "Seccomp": "2"} and out["ptrace"] == errno.EPERM
    assert out["matmul"] == 64.0 and out["pool"] and out["threads"] == [512.0] * 4
    assert out["true"] == 0 and out["child_seccomp"] == ["Seccomp:", "2"] and out["fork"] == 3
    assert out["file"] == "hello" and out["socketpair"] == "ping" and out["profiler"]
