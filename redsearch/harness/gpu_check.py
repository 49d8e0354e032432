"""`make gpu-check`: does llama.cpp run the default model on this machine's GPU, and how much
faster than on its CPU?

`make gpu-check` builds llama-cpp-python with CUDA into the wheelhouse, unpacks it beside
.venv's CPU build and runs this module with it first on the path. One run loads the embedded
default model twice, with no layer and with every layer on the GPU, generates the same
tokens (greedy) with each, and prints both speeds, as llama.cpp placed the layers:

    CPU  0 GPU layers, 8 threads: prompt 180.2 tokens/s, generation 14.1 tokens/s
    GPU  29/29 layers on CUDA0 (NVIDIA H100 80GB HBM3): prompt …, generation … tokens/s
    GPU against CPU: generation 12.3×, prompt 41.0×

Where CUDA is missing (`--preflight`: no nvcc to build with, no NVIDIA device; then: a build
without a GPU backend, or no layer offloaded) it says so in one line and exits 2.
`--cpu-only` measures the CPU half alone; `--model FILE.gguf` measures another model.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redsearch.terminal import report_error, say
from research_core.errors import ModelUnavailable, RunError
from research_core.models import embedded
from research_core.models.llama_tier import load_llama
from research_core.models.offload import ALL_LAYERS, Offload, gpu_build

PROGRAM = "gpu-check"
CUDA_BIN = Path("/usr/local/cuda/bin")
DEVICES = Path("/dev")
N_CTX = 2048
PROMPT = ("Write a detailed report on how heat pump sales moved in Europe between 2020 and "
          "2026: the markets that grew, the ones that fell, the subsidies and energy prices "
          "behind each change, and what installers and manufacturers said about the outlook. "
          "Give figures where they are known, name the sources, and keep to the facts.")


@dataclass(frozen=True)
class Speed:
    """One half of the check: where llama.cpp put the layers and how fast it went."""

    offload: Offload
    threads: int
    prompt_tokens: int
    prompt_s: float
    tokens: int
    generation_s: float

    @property
    def prompt_tps(self) -> float:
        return self.prompt_tokens / self.prompt_s

    @property
    def generation_tps(self) -> float:
        return self.tokens / self.generation_s

    def line(self, label: str) -> str:
        where = self.offload.describe("GPU layers") if self.offload.on_gpu else \
            f"0 GPU layers, {self.threads} threads"
        return (f"{label:<5}{where}: prompt {self.prompt_tps:.1f} tokens/s "
                f"({self.prompt_tokens} tokens), generation {self.generation_tps:.1f} "
                f"tokens/s ({self.tokens} tokens in {self.generation_s:.2f} s)")


def cuda_problem(cuda_bin: Path = CUDA_BIN, path: str | None = None,
                 devices: Path = DEVICES) -> str | None:
    """Why the CUDA wheel cannot be built or used here, or None: no nvcc on `path` (PATH by
    default) or in `cuda_bin`, or no NVIDIA device under `devices`."""
    if not shutil.which("nvcc", path=path) and not (cuda_bin / "nvcc").is_file():
        return (f"no CUDA compiler: nvcc is neither on PATH nor in {cuda_bin}, so the CUDA "
                "build of llama-cpp-python cannot be made here (run this on a machine with an "
                "NVIDIA GPU and the CUDA toolkit; CUDA_HOME names another toolkit folder)")
    if not any(devices.glob("nvidia[0-9]*")):
        return f"no NVIDIA GPU: no {devices}/nvidia0 device on this machine"
    return None


def measure(path: str, gpu_layers: int, tokens: int) -> Speed:
    """Load `path` with `gpu_layers` on the GPU, warm it up, and time one prompt and
    `tokens` generated tokens."""
    loaded = load_llama(path, n_ctx=N_CTX, n_threads=None, gpu_layers=gpu_layers)
    llama = loaded.llama
    prompt = llama.tokenize(PROMPT.encode())
    _timed(llama, prompt[:8], 4)  # the first call's one-off costs (buffers, kernels)
    prompt_s, generation_s = _timed(llama, prompt, tokens)
    return Speed(loaded.offload, int(llama.n_threads), len(prompt), prompt_s, tokens,
                 generation_s)


def _timed(llama: Any, prompt: list[int], tokens: int) -> tuple[float, float]:
    """Seconds to the first token (the prompt's evaluation) and for `tokens` more, whatever
    they are (an end-of-text token does not stop the count)."""
    llama.reset()
    stream: Iterator[int] = llama.generate(prompt, temp=0.0, reset=True)
    started = time.perf_counter()
    next(stream)
    first = time.perf_counter()
    for _ in range(tokens):
        next(stream)
    done = time.perf_counter()
    stream.close()  # type: ignore[attr-defined]  # a generator
    return first - started, done - first


def check(args: argparse.Namespace) -> int:
    import llama_cpp

    build = f"llama-cpp-python {llama_cpp.__version__} from {Path(llama_cpp.__file__).parent}"
    if not args.cpu_only and not gpu_build():
        raise ModelUnavailable(f"{build} cannot offload to a GPU (llama_supports_gpu_offload() "
                               "is false: a CPU build, or no GPU visible); `make gpu-check` "
                               "builds and uses the CUDA one")
    say(f"{PROGRAM}: {build}")
    path = args.model or embedded.model_path()
    say(f"{PROGRAM}: model {Path(path).name}, {args.tokens} generated tokens a half")
    cpu = measure(path, 0, args.tokens)
    print(cpu.line("CPU"), flush=True)
    if args.cpu_only:
        return 0
    gpu = measure(path, ALL_LAYERS, args.tokens)
    if not gpu.offload.on_gpu:
        raise ModelUnavailable(f"the model ran on the {gpu.offload.describe('GPU layers')}")
    print(gpu.line("GPU"))
    print(f"GPU against CPU: generation {gpu.generation_tps / cpu.generation_tps:.1f}×, "
          f"prompt {gpu.prompt_tps / cpu.prompt_tps:.1f}×")
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="", help="a GGUF file (default: the embedded one)")
    parser.add_argument("--tokens", type=int, default=128, help="tokens generated a half")
    parser.add_argument("--cpu-only", action="store_true", help="measure the CPU half alone")
    parser.add_argument("--preflight", action="store_true",
                        help="only say whether CUDA can be built and used here")
    parser.add_argument("--cuda-bin", default=str(CUDA_BIN),
                        help=f"where nvcc is when it is not on PATH (default: {CUDA_BIN})")
    args = parser.parse_args(argv)
    if args.tokens < 1:
        parser.error("--tokens must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.preflight:
            problem = cuda_problem(Path(args.cuda_bin))
            if problem:
                raise ModelUnavailable(problem)
            return 0
        return check(args)
    except RunError as exc:
        return report_error(PROGRAM, exc)


if __name__ == "__main__":
    sys.exit(main())
