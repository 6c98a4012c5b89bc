"""Does the tutor's model answer in the page's language? A few questions per language (Italian, Japanese, Arabic),
asked in that language through the tutor's own route (the API's Accept-Language, as tutor.js sends its page's), on a
card step and on an exercise step whose submission failed; each answer judged by academy/tutor/language.py
(its letters: Arabic or Japanese script, Italian against English function words) and by how much of it is in the
page's script at all.

    .venv/bin/python benchmarks/tutor_language.py [--port N | --url URL --model NAME] [--prompt new|old|both]

`--prompt old` is the prompt before this measurement (the language named in its own script, "Answer in العربية",
once, in the system message); `new` names it in English ("Arabic") and repeats it after the question.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "platform"))
sys.path.insert(0, str(REPO / "benchmarks"))

from tutor import failing_learner  # noqa: E402

from tests.support.apps import WebSession, ready_app  # noqa: E402
from tests.support.tutor import TutorModelServer  # noqa: E402

CARD = ("mixed-precision", "what-mixed-precision-means")
EXERCISE = ("mixed-precision", "amp-step")
QUESTIONS = {
    "it": ["Che cos'è la precisione mista?", "Perché la mia verifica scaled-backward fallisce?"],
    "ja": ["混合精度とは何ですか？", "scaled-backward のチェックはなぜ失敗しますか？"],
    "ar": ["ما هي الدقة المختلطة؟", "لماذا يفشل فحص scaled-backward؟"],
}


def ask(web: WebSession, path: str, question: str, language: str) -> dict:
    import json

    response = web.api("POST", path, json={"question": question}, headers={"Accept-Language": language})
    text, done = "", {}
    for block in response.get_data(as_text=True).split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if fields.get("event") == "token":
            text += json.loads(fields["data"])["text"]
        elif fields.get("event") == "done":
            done = json.loads(fields["data"])
    return {"text": text, "followed": done.get("language", {}).get("followed"),
            "note": bool(done.get("language_note"))}


def use_prompt(kind: str) -> None:
    from academy.i18n import LANGUAGES
    from academy.tutor import language as language_names
    from academy.tutor import prompt

    if kind == "old":
        prompt.prompt_name = lambda code: "English" if code == "en" else LANGUAGES.get(code, "English")
        prompt.ANSWER_IN = ""
    else:
        prompt.prompt_name = language_names.prompt_name
        prompt.ANSWER_IN = "Answer in {language}, not in English."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int)
    parser.add_argument("--url")
    parser.add_argument("--model", default="")
    parser.add_argument("--prompt", choices=("new", "old", "both"), default="both")
    parser.add_argument("--max-tokens", type=int, default=60)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="dla-tutor-language-"))
    if args.url:
        model = TutorModelServer.running(0)
        model.url = args.url
    else:
        model = TutorModelServer.running(args.port) if args.port else TutorModelServer(folder)
        model.wait_ready(timeout=600)
    app = ready_app({"INSTANCE_PATH": str(folder / "instance"), "SANDBOX": "local", "SECRET_KEY": "bench",
                     "REQUEUE_ON_START": False, "WARM_POOL": 0, "TUTOR_URL": model.url, "TUTOR_MODEL": args.model,
                     "TUTOR_MAX_TOKENS": args.max_tokens, "TUTOR_QUESTIONS_PER_MINUTE": 1000,
                     "TUTOR_QUESTIONS_PER_DAY": 10000, "TUTOR_FIRST_TOKEN_TIMEOUT_S": 600,
                     "TUTOR_ANSWER_TIMEOUT_S": 900})
    try:
        web = failing_learner(app, "raw_backward.py", "/".join(EXERCISE))
        for kind in ("old", "new") if args.prompt == "both" else (args.prompt,):
            use_prompt(kind)
            for language, questions in QUESTIONS.items():
                judged = []
                for question, (lesson, step) in zip(questions * 2, (CARD, EXERCISE, CARD, EXERCISE)):
                    started = time.monotonic()
                    result = ask(web, f"/api/tutor/{lesson}/{step}", question, language)
                    judged.append(result["followed"])
                    print(f"[{kind} {language} {step} {time.monotonic() - started:.0f} s] followed={result['followed']}"
                          f" note={result['note']}: {result['text'][:140]!r}", flush=True)
                print(f"== prompt {kind}, {language}: {sum(j is True for j in judged)}/{len(judged)} answers in the "
                      f"page's language ({sum(j is None for j in judged)} too short to tell)", flush=True)
    finally:
        from academy import jobs

        jobs.shutdown(app)
        model.stop()


if __name__ == "__main__":
    main()
