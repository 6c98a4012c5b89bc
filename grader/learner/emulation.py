"""Run the lessons' CUDA code on a CPU-only machine, honestly.

Learners write the lesson's code as it is (`torch.autocast(device_type='cuda')`,
`torch.cuda.amp.GradScaler()`, ...). Without a GPU, PyTorch would warn and silently run in fp32 with a
disabled scaler, so nothing the lesson teaches would happen. Here CUDA autocast becomes CPU float16
autocast (the dtype CUDA autocast defaults to) and the CUDA GradScaler becomes the CPU one. On a machine
with CUDA nothing is patched.

The result says "cpu (cuda emulated)" only where the run used what was patched (`emulated()`: CUDA asked for
and given the CPU, CPU autocast given CUDA's float16): an exercise whose code never asks for CUDA (a gloo DDP
loop, a DataLoader) ran on the CPU as it is, and says "cpu". The learner's process sends it in its frame, like
its observations: it only ever chooses between the two words for the CPU the grading side names.
"""
from __future__ import annotations

import warnings
from typing import Any

import torch

EMULATED_DEVICE = "cpu (cuda emulated)"
CPU_DEVICE = "cpu"
# PyTorch's own FutureWarnings for the legacy names (torch/cuda/amp/*.py, deprecated since 2.4): the
# emulated names give them too, so the learner sees the deprecation on a CPU as on a GPU.
LEGACY_SCALER_WARNING = ("`torch.cuda.amp.GradScaler(args...)` is deprecated. "
                         "Please use `torch.amp.GradScaler('cuda', args...)` instead.")
LEGACY_AUTOCAST_WARNING = ("`torch.cuda.amp.autocast(args...)` is deprecated. "
                           "Please use `torch.amp.autocast('cuda', args...)` instead.")


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def amp_device() -> str:
    """The device type autocast and GradScaler really run on in this process."""
    return "cuda" if cuda_available() else "cpu"


def device_label(emulated: bool = True) -> str:
    """The device the learner's code ran on: the GPU's name, else the CPU, "(cuda emulated)" where the run
    used the emulation (`emulated()` in the learner's process)."""
    if cuda_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return EMULATED_DEVICE if emulated else CPU_DEVICE


# What this process used of the emulation: names of the patched calls that changed something ("autocast",
# "GradScaler", ".to('cuda')", ...). Filled only by the patches, so it stays empty where nothing asked for CUDA.
_USED: set[str] = set()


def emulated() -> bool:
    """Whether anything this process ran was given the CPU for CUDA (or CUDA's autocast dtype): the frame's
    `emulated`, which makes the device read "cpu (cuda emulated)" rather than "cpu"."""
    return bool(_USED)


def emulated_uses() -> list[str]:
    return sorted(_USED)


def _map_device(device: Any, use: str | None = None) -> Any:
    if isinstance(device, torch.device) and device.type == "cuda":
        _USED.add(use or "cuda device")
        return torch.device("cpu")
    if isinstance(device, str) and device.startswith("cuda"):
        _USED.add(use or "cuda device")
        return "cpu"
    return device


def install_cuda_emulation(scaler_class: type | None = None) -> None:
    """Patch torch so the lesson's CUDA AMP code runs as CPU float16 AMP. No-op when CUDA exists.

    `scaler_class` lets the harness put its recording GradScaler behind every public name.
    """
    base_scaler: Any = scaler_class or torch.amp.GradScaler
    if cuda_available():
        if scaler_class is not None:
            torch.amp.GradScaler = scaler_class
            torch.cuda.amp.GradScaler = _legacy_scaler(scaler_class, "cuda")
        return

    # CPU autocast defaults to bfloat16; CUDA's default is float16, which is what the lesson teaches.
    torch.set_autocast_dtype("cpu", torch.float16)
    base_autocast: Any = torch.amp.autocast_mode.autocast  # Any: torch is not followed by the type checker

    class autocast(base_autocast):  # noqa: N801 - mirrors torch's own name
        def __init__(self, device_type: str = "cuda", dtype: torch.dtype | None = None,
                     enabled: bool = True, cache_enabled: bool | None = None):
            if device_type == "cuda":
                device_type = "cpu"
                dtype = dtype or torch.float16
                if enabled:
                    _USED.add("autocast")
            elif device_type == "cpu" and dtype is None and enabled:
                _USED.add("autocast")  # CPU autocast in CUDA's float16 (set_autocast_dtype above), not bfloat16
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def cuda_autocast(enabled: bool = True, dtype: torch.dtype = torch.float16,
                      cache_enabled: bool = True) -> autocast:
        warnings.warn(LEGACY_AUTOCAST_WARNING, FutureWarning, stacklevel=2)
        return autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(base_scaler):
        def __init__(self, device: str = "cuda", *args: Any, **kwargs: Any):
            super().__init__(_map_device(device, "GradScaler"), *args, **kwargs)

    torch.autocast = autocast
    torch.amp.autocast = autocast
    torch.amp.autocast_mode.autocast = autocast
    torch.cuda.amp.autocast = cuda_autocast
    torch.amp.GradScaler = GradScaler
    torch.cuda.amp.GradScaler = _legacy_scaler(GradScaler, "cuda")

    # "Is autocast on?" without an argument asks about CUDA; answer for the device that really runs it.
    original_enabled = torch.is_autocast_enabled

    def is_autocast_enabled(device_type: str | None = None) -> bool:
        return bool(original_enabled(_map_device(device_type or "cuda", "is_autocast_enabled")))

    torch.is_autocast_enabled = is_autocast_enabled

    # Moving to "cuda" stays on the CPU; syncing with a GPU that is not there is a no-op.
    tensor_to, module_to = torch.Tensor.to, torch.nn.Module.to

    def tensor_to_patched(self: Any, *args: Any, **kwargs: Any) -> Any:  # takes what torch's own method takes
        args = tuple(_map_device(a, ".to('cuda')") for a in args)
        if "device" in kwargs:
            kwargs["device"] = _map_device(kwargs["device"], ".to('cuda')")
        return tensor_to(self, *args, **kwargs)

    def module_to_patched(self: Any, *args: Any, **kwargs: Any) -> Any:  # takes what torch's own method takes
        args = tuple(_map_device(a, ".to('cuda')") for a in args)
        if "device" in kwargs:
            kwargs["device"] = _map_device(kwargs["device"], ".to('cuda')")
        return module_to(self, *args, **kwargs)

    torch.Tensor.to = tensor_to_patched
    torch.nn.Module.to = module_to_patched
    def on_cpu(use: str) -> Any:
        def stays(self: Any = None, *args: Any, **kwargs: Any) -> Any:
            _USED.add(use)
            return self
        return stays

    torch.Tensor.cuda = on_cpu(".cuda()")
    torch.nn.Module.cuda = on_cpu(".cuda()")
    torch.cuda.synchronize = on_cpu("torch.cuda.synchronize()")


def _legacy_scaler(scaler_class: type, device: str) -> type:
    """`torch.cuda.amp.GradScaler(...)`: same object, without the device argument, and with PyTorch's own
    deprecation warning, emulated or not: the learner should learn the current name."""

    class LegacyGradScaler(scaler_class):
        def __init__(self, *args: Any, **kwargs: Any):
            warnings.warn(LEGACY_SCALER_WARNING, FutureWarning, stacklevel=2)
            super().__init__(device, *args, **kwargs)

    LegacyGradScaler.__name__ = "GradScaler"
    return LegacyGradScaler
