"""The tutor: how fast the embedded model answers on this CPU, and how well, beside the cost of a page load.

    .venv/bin/python benchmarks/tutor.py [--port N] [--rounds 4] [--max-tokens 120] [--no-questions]

Timing: the app (Flask's test client, in this process, a local sandbox) asks the embedded model server
(academy/tutor/embedded.py: SmolLM2-135M-Instruct through `transformers serve`, one CPU thread; started here, or
the one already on --port) through the tutor's own route, as a guest whose amp-step submission failed (one real
grading). Time to first token and tokens/s (answer characters / 4 per second after the first token, a rough
token count that holds for English), p50/p95, with 1 and 4 learners asking at once; beside the p50 of a lesson
page load (which never contacts the model server).

Quality: QUESTIONS, per exercise, each with the facts a correct answer must contain (each a regex, any of its
alternatives), what it must not contain (the solution's code, an unopened hint), scored automatically:
facts found / facts asked, forbidden content, and whether the answer cited a card (the server appends
sources from the context it supplied, so this measures the context, not the model's claims).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "platform"))

from api_latency import percentile, print_table  # noqa: E402

from tests.support.apps import WebSession, ready_app, wait_for  # noqa: E402
from tests.support.paths import EXERCISES  # noqa: E402
from tests.support.tutor import TutorModelServer  # noqa: E402

LESSON, STEP = "mixed-precision", "amp-step"
RAW_BACKWARD = (EXERCISES / LESSON / STEP / "mistakes" / "raw_backward.py").read_text()
TIMING_QUESTION = "Why does the check 'Backward runs on the scaled loss' fail, and which line should I look at?"

# The question sets, all 16 exercises: benchmarks/tutor_questions.py.
from tutor_questions import FORBIDDEN, QUESTIONS  # noqa: E402


def timed_answer(web: WebSession, path: str, question: str, code: str | None) -> tuple[float, float, str, dict]:
    """(seconds to the first token, tokens per second after it, the answer, the done event)."""
    started = time.monotonic()
    body = {"question": question} if code is None else {"question": question, "code": code}
    response = web.api("POST", path, json=body, buffered=False)
    if response.status_code != 200:
        raise RuntimeError(f"{response.status_code}: {response.get_data(as_text=True)[:300]}")
    first, text, done = None, "", {}
    for chunk in response.response:
        for block in chunk.decode().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if fields.get("event") == "token":
                first = first or time.monotonic()
                text += json.loads(fields["data"])["text"]
            elif fields.get("event") == "done":
                done = json.loads(fields["data"])
    end = time.monotonic()
    first = first or end
    rate = (len(text) / 4) / (end - first) if end > first else float("nan")
    return first - started, rate, text, done


def failing_learner(app, mistake: str, exercise: str) -> WebSession:  # noqa: ANN001
    web = WebSession(app.test_client()).guest()
    if mistake:
        code = (EXERCISES / exercise / "mistakes" / mistake).read_text()
        submitted = web.api("POST", "/api/submissions", json={"exercise": exercise, "code": code})
        wait_for(app, submitted.json["id"], timeout=300)
    return web


def timing(app, rounds: int) -> list[list]:  # noqa: ANN001
    rows = []
    learners = [failing_learner(app, "raw_backward.py", f"{LESSON}/{STEP}") for _ in range(4)]
    pages = []
    for _ in range(10):
        started = time.monotonic()
        assert learners[0].client.get(f"/lessons/{LESSON}/{STEP}").status_code == 200
        pages.append(time.monotonic() - started)
    path = f"/api/tutor/{LESSON}/{STEP}"
    for concurrent in (1, 4):
        ttft, rates = [], []
        lock = threading.Lock()

        def ask(web: WebSession) -> None:
            first, rate, _text, _done = timed_answer(web, path, TIMING_QUESTION, RAW_BACKWARD)
            with lock:
                ttft.append(first)
                rates.append(rate)
        for _ in range(rounds):
            threads = [threading.Thread(target=ask, args=(learners[i],)) for i in range(concurrent)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        rows.append([concurrent, len(ttft), percentile(ttft, 50), percentile(ttft, 95),
                     statistics.median(rates), percentile(pages, 50) * 1000])
    return rows


def quality(app, exercises: list[str], log: Path | None = None) -> tuple[list[list], list[str]]:  # noqa: ANN001
    """Each exercise's question set, asked by a guest whose submission of the set's mistake failed (all the
    submissions are made first, so they grade while the model answers). One JSON line per answer to `log`."""
    from academy.tutor.guard import Guard, _shingles
    from grader.core.course import load_course

    course = load_course(EXERCISES)
    rows, failures = [], []
    learners = {}
    for exercise_id in exercises:
        mistake = QUESTIONS[exercise_id][0]
        web = WebSession(app.test_client()).guest()
        submitted = None
        if mistake:
            code = (EXERCISES / exercise_id / "mistakes" / mistake).read_text()
            submitted = web.api("POST", "/api/submissions", json={"exercise": exercise_id, "code": code}).json["id"]
        learners[exercise_id] = (web, submitted)
    for exercise_id in exercises:
        mistake, questions = QUESTIONS[exercise_id]
        exercise = course.exercises[exercise_id]
        web, submitted = learners[exercise_id]
        if submitted is not None:
            wait_for(app, submitted, timeout=900)
        lesson, step = exercise_id.split("/")
        hints = [h for c in exercise.checks for h in c.hints]
        judge = Guard(exercise.solution_code(), hints, exercise.entry)
        facts = found = forbidden = cited = 0
        started = time.monotonic()
        for question, required, banned in questions:
            _first, _rate, text, done = timed_answer(web, f"/api/tutor/{lesson}/{step}", question, None)
            hits = [bool(re.search(fact, text, re.IGNORECASE)) for fact in required]
            facts, found = facts + len(required), found + sum(hits)
            lines = text.splitlines()
            # A hint counts as leaked only where it is one the learner had not opened (none were, here).
            bad = [b for b in banned + FORBIDDEN.get(exercise_id, []) if re.search(b, text)]
            bad += ["solution lines"] if judge._run_length(lines) >= 3 else []
            bad += ["an unopened hint"] if any(_shingles(h, 8) & _shingles(text, 8) for h in hints) else []
            forbidden += bool(bad)
            card = any(s["kind"] == "card" for s in done.get("sources", []))
            cited += card
            if log is not None:
                with log.open("a") as out:
                    out.write(json.dumps({"exercise": exercise_id, "question": question, "answer": text,
                                          "facts": len(required), "found": sum(hits), "forbidden": bad,
                                          "cited_card": card, "at": time.time()}) + "\n")
            if not all(hits) or bad:
                failures.append(f"{exercise_id}: {question!r}: missing {[f for f, h in zip(required, hits) if not h]}"
                                f"{' forbidden ' + str(bad) if bad else ''}: {text[:160]!r}")
        rows.append([exercise_id, len(questions), f"{found}/{facts}", f"{100 * found / facts:.0f}%", forbidden,
                     f"{cited}/{len(questions)}"])
        print(" | ".join(map(str, rows[-1])), f"({time.monotonic() - started:.0f} s)", flush=True)
    return rows, failures


def rescore(logs: list[Path]) -> None:
    """The question-set table again from JSONL logs (--log), with a stricter column: only the facts the question
    itself does not already state (an answer that restates the question gets those for free)."""
    by_exercise: dict[str, list[dict]] = {}
    for log in logs:
        for line in log.read_text().splitlines():
            row = json.loads(line)
            by_exercise.setdefault(row["exercise"], []).append(row)
    rows = []
    for exercise_id in QUESTIONS:
        answers = {row["question"]: row for row in by_exercise.get(exercise_id, [])}
        if not answers:
            continue
        facts = found = fresh = fresh_found = forbidden = cited = 0
        for question, required, _banned in QUESTIONS[exercise_id][1]:
            if question not in answers:
                continue
            text = answers[question]["answer"]
            for fact in required:
                hit = bool(re.search(fact, text, re.IGNORECASE))
                facts, found = facts + 1, found + hit
                if not re.search(fact, question, re.IGNORECASE):
                    fresh, fresh_found = fresh + 1, fresh_found + hit
            forbidden += bool(answers[question]["forbidden"])
            cited += answers[question]["cited_card"]
        rows.append([exercise_id, len(answers), f"{found}/{facts}", f"{100 * found / facts:.0f}%",
                     f"{fresh_found}/{fresh}", f"{100 * fresh_found / fresh:.0f}%" if fresh else "-", forbidden,
                     f"{cited}/{len(answers)}"])
    print_table(["exercise", "answers", "facts", "score", "facts not in the question", "strict score", "forbidden",
                 "cited a card"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, help="an embedded model server already running there")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=120)
    parser.add_argument("--no-questions", action="store_true")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--exercises", nargs="*", help="the question sets to ask (default: all 16)")
    parser.add_argument("--url", help="another OpenAI-compatible server instead of the embedded one")
    parser.add_argument("--model", default="", help="the model name to ask --url for")
    parser.add_argument("--log", type=Path, help="append one JSON line per scored answer here")
    parser.add_argument("--rescore", type=Path, nargs="+", help="only print the table of these --log files")
    args = parser.parse_args()
    if args.rescore:
        rescore(args.rescore)
        return
    folder = Path(tempfile.mkdtemp(prefix="dla-tutor-bench-"))
    started = time.monotonic()
    if args.url:
        model = TutorModelServer.running(0)
        model.url = args.url
    else:
        model = TutorModelServer.running(args.port) if args.port else TutorModelServer(folder)
        model.wait_ready(timeout=600)
    print(f"model server ready after {time.monotonic() - started:.1f} s", flush=True)
    app = ready_app({"INSTANCE_PATH": str(folder / "instance"), "SANDBOX": "local", "SECRET_KEY": "bench",
                     "REQUEUE_ON_START": False, "WARM_POOL": 0, "TUTOR_URL": model.url, "TUTOR_MODEL": args.model,
                     "TUTOR_MAX_TOKENS": args.max_tokens, "TUTOR_CONCURRENT": 4, "TUTOR_QUEUE": 4,
                     "TUTOR_QUESTIONS_PER_MINUTE": 1000, "TUTOR_QUESTIONS_PER_DAY": 10000,
                     "TUTOR_FIRST_TOKEN_TIMEOUT_S": 600, "TUTOR_ANSWER_TIMEOUT_S": 900})
    try:
        if not args.no_timing:
            print(f"\nTiming ({args.max_tokens} tokens at most per answer, {args.rounds} rounds):")
            print_table(["learners at once", "answers", "first token p50 s", "first token p95 s", "tokens/s p50",
                         "page load p50 ms"], timing(app, args.rounds))
        if not args.no_questions:
            rows, failures = quality(app, args.exercises or list(QUESTIONS), args.log)
            print("\nQuestion sets (facts found, answers with forbidden content, answers citing a card):")
            print_table(["exercise", "questions", "facts", "score", "forbidden", "cited a card"], rows)
            for failure in failures:
                print("  -", failure)
    finally:
        from academy import jobs

        jobs.shutdown(app)
        model.stop()


if __name__ == "__main__":
    main()
