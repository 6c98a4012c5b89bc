"""Measure the memory a training step needs, honestly on either device.

On CUDA the caching allocator knows the real peak (`torch.cuda.max_memory_allocated`). A CPU has no
such counter, so there we count what dominates a training step's peak on any device and can be
counted deterministically: the bytes of activations autograd saves for backward, seen through
`torch.autograd.graph.saved_tensors_hooks`. Each storage is counted once, and the model's own weights
(which autograd also saves, but which live in memory anyway) are left out.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

CPU_MEASURE = "bytes of activations saved for backward (CPU: saved_tensors_hooks)"
CUDA_MEASURE = "peak CUDA memory allocated during the step, above what was allocated before it"


class SavedTensorMeter:
    """A context manager counting the tensors autograd saves for backward while it is active.

    Hooks nest: inside a non-reentrant `checkpoint`, its own hooks take over, which is exactly why the
    activations it will recompute never reach this meter.
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = ()) -> None:
        self._excluded = {t.untyped_storage().data_ptr() for t in exclude}
        self._storages: dict[int, int] = {}
        self.count = 0
        self._hooks: Any = None

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.count += 1
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in self._excluded:
            self._storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @staticmethod
    def _unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    @property
    def bytes(self) -> int:
        return sum(self._storages.values())

    def __enter__(self) -> "SavedTensorMeter":
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hooks.__exit__(*exc)


def cuda_peak(function: Callable[[], Any]) -> tuple[Any, int]:
    """Run `function`; return its result and the peak CUDA memory it allocated above the start."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = function()
    torch.cuda.synchronize()
    return result, torch.cuda.max_memory_allocated() - before


def measure_step(function: Callable[[], Any], device: str, params: Iterable[torch.Tensor]) -> tuple[Any, int, int]:
    """(result, bytes by the device's measure, tensors saved for backward) of one call of `function`."""
    params = list(params)
    with SavedTensorMeter(exclude=params) as meter:
        if device == "cuda":
            result, peak = cuda_peak(function)
        else:
            result = function()
            peak = meter.bytes
    return result, peak, meter.count


def return_freed_memory() -> None:
    """Make glibc hand freed blocks back to the kernel at once, so a process's peak is what it held at
    one moment, not what its heap grew to. By default glibc raises its mmap threshold after the first
    large free (up to 32 MB), after which freed activations stay in the heap and every later step
    appears to need them too (measured: a checkpointed step at 85% of the original's peak instead of
    ~40%). Setting the threshold fixes it. A process can only raise its own peak by undoing this."""
    import ctypes

    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 128 * 1024)
    libc.mallopt(m_trim_threshold, 128 * 1024)


def describe(device: str) -> str:
    return CUDA_MEASURE if device == "cuda" else CPU_MEASURE
