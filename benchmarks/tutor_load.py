"""Where the embedded model server's start goes: each phase of what `transformers serve` does before it answers,
timed in one process (wall and CPU seconds, one thread as the server runs), from the GGUF that the model package
ships and from the safetensors copy that academy/tutor/embedded.py converts it to once.

    .venv/bin/python benchmarks/tutor_load.py [--gguf-only]

`transformers serve` does the config and the tokenizer in its API process, then spawns a model process (a fresh
interpreter: torch and transformers imported again) that loads the config, the tokenizer and the weights once more;
so a start costs about: import + config + tokenizer, twice, plus the weights once.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "platform"))
os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
                   "CUDA_VISIBLE_DEVICES": "", "HF_HOME": tempfile.mkdtemp(prefix="dla-tutor-load-hf-")})


class Phase:
    rows: list[tuple[str, float, float]] = []

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> None:
        self.wall, self.cpu = time.monotonic(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.rows.append((self.name, time.monotonic() - self.wall, time.process_time() - self.cpu))
        print(f"{self.name:<48} {self.rows[-1][1]:7.1f} s wall {self.rows[-1][2]:7.1f} s CPU", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf-only", action="store_true")
    args = parser.parse_args()
    with Phase("import torch"):
        import torch
    torch.set_num_threads(1)
    with Phase("import transformers (+ serving's modules)"):
        import transformers.cli.serving.model_manager  # noqa: F401
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from academy.tutor import embedded

    path = embedded.model_path()
    folder, name = str(path.parent), path.name
    with Phase("GGUF: config"):
        AutoConfig.from_pretrained(folder, gguf_file=name)
    with Phase("GGUF: tokenizer (vocabulary from the file)"):
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    with Phase("GGUF: weights (de-quantized to float32)"):
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    if args.gguf_only:
        return
    del model, tokenizer
    with Phase("convert once (embedded.convert: GGUF load + save)"):
        converted = embedded.convert(Path(tempfile.mkdtemp(prefix="dla-tutor-load-st-")))
    with Phase("safetensors: config"):
        AutoConfig.from_pretrained(converted)
    with Phase("safetensors: tokenizer"):
        AutoTokenizer.from_pretrained(converted)
    with Phase("safetensors: weights"):
        AutoModelForCausalLM.from_pretrained(converted, dtype=torch.float32)


if __name__ == "__main__":
    main()
