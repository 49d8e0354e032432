"""Where a loaded GGUF model runs, GPU or CPU, in llama.cpp's own words.

`RED_<TIER>_GPU_LAYERS` (and `RED_EMBED_GPU_LAYERS`) asks llama.cpp to put that many layers
on a GPU (-1: all). Whether it did is what llama.cpp says while it loads the model:
"load_tensors: offloaded 29/29 layers to GPU", after "using device CUDA0 (NVIDIA H100 …)".
A build without a GPU backend says neither (`llama_supports_gpu_offload()` is false) and
runs every layer on the CPU whatever was asked. `capture_load_log` records those lines
while a model loads; `Offload.from_log` reads them.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

ALL_LAYERS = -1
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_DEVICE = re.compile(r"using device (\S+) \(([^)]*)\)")
_BUILD_HINT = "build llama-cpp-python with CUDA: docs/models.md, GPU workers"


@dataclass(frozen=True)
class Offload:
    """What was asked (`asked` layers; -1 all) and what llama.cpp did with it."""

    asked: int
    gpu_build: bool  # llama_supports_gpu_offload(): the build has a GPU backend and sees a GPU
    gpu_layers: int = 0  # layers llama.cpp put on a GPU ("offloaded N/M layers to GPU")
    layers: int = 0  # M of that line: the model's offloadable layers (0: llama.cpp said none)
    device: str = ""  # "CUDA0 (NVIDIA H100 80GB HBM3)"

    @classmethod
    def from_log(cls, asked: int, gpu_build: bool, log: str) -> Offload:
        offloaded = _OFFLOADED.search(log)
        devices = [f"{m[1]} ({m[2]})" for m in _DEVICE.finditer(log)]
        return cls(asked, gpu_build,
                   gpu_layers=int(offloaded[1]) if offloaded else 0,
                   layers=int(offloaded[2]) if offloaded else 0,
                   device=", ".join(devices))

    @property
    def on_gpu(self) -> bool:
        return self.gpu_layers > 0

    @property
    def missed(self) -> bool:
        """Layers were asked for on a GPU and none went there."""
        return self.asked != 0 and not self.on_gpu

    def describe(self, setting: str) -> str:
        """Where the layers run, for logs and `redsearch doctor`: "GPU (29/29 layers on
        CUDA0 (NVIDIA H100 80GB HBM3))", "CPU (RED_PLANNER_GPU_LAYERS=0)", or CPU and why
        not the GPU that `setting` asked for."""
        if self.on_gpu:
            where = f" on {self.device}" if self.device else ""
            if self.gpu_layers >= self.layers:
                return f"GPU ({self.gpu_layers}/{self.layers} layers{where})"
            return f"GPU and CPU ({self.gpu_layers}/{self.layers} layers{where}, the rest on CPU)"
        if self.asked == 0:
            return f"CPU ({setting}=0)"
        if not self.gpu_build:
            return (f"CPU, though {setting}={self.asked} asks for a GPU: this llama-cpp-python "
                    "build has no GPU backend or sees no GPU (llama_supports_gpu_offload() is "
                    f"false; {_BUILD_HINT})")
        return (f"CPU, though {setting}={self.asked} asks for a GPU: llama.cpp offloaded no "
                "layer")


def gpu_build() -> bool:
    """llama.cpp's answer: can this build offload layers to a GPU it sees?"""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


_capture_guard = threading.Lock()  # one capture at a time: the log callback is process-wide
_lines_guard = threading.Lock()
_lines: list[str] | None = None
_recorder: Any = None  # the ctypes callback, kept alive for as long as llama.cpp holds it


@contextlib.contextmanager
def capture_load_log() -> Iterator[list[str]]:
    """The lines llama.cpp logs meanwhile (every level), still passed on to llama-cpp-python's
    own callback, which prints what its verbosity lets through."""
    global _lines
    with _capture_guard:
        _install_recorder()
        found: list[str] = []
        with _lines_guard:
            _lines = found
        try:
            yield found
        finally:
            with _lines_guard:
                _lines = None


def _install_recorder() -> None:
    global _recorder
    if _recorder is not None:
        return
    import ctypes

    import llama_cpp
    from llama_cpp._logger import llama_log_callback as passed_on

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def record(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        with _lines_guard:
            if _lines is not None:
                _lines.append(text.decode("utf-8", "replace"))
        passed_on(level, text, user_data)

    llama_cpp.llama_log_set(record, ctypes.c_void_p(0))
    _recorder = record
