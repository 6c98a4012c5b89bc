"""What the verdict's pictures (grader/display.py) cost, side by side with a verdict without them.

    .venv/bin/python benchmarks/verdict_pictures.py [--rounds 3]

For each exercise's reference solution and one mistake: the size of trace + figures in the result (the
cap is 32 KB), the grading time (`duration_s` of `grader check --sandbox local --json`) with the exercise's
@figure tests and with a copy of the exercise whose @figure tests are removed, alternating, and the time
Chromium takes to draw the verdict (static/figures.js) with and without its pictures, from the result's
arrival to the nodes built (`academyFigures.render` plus the checks' list, median of 20).
"""
from __future__ import annotations

import argparse
import ast
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = [("mixed-precision/amp-step", "mistakes/raw_backward.py"),
         ("mixed-precision/fix-underflow", "mistakes/no_scaler.py"),
         ("gradient-accumulation/accumulate-amp", "mistakes/no-division.py"),
         ("profiling/fix-the-bottleneck", "solution.py"),
         ("gpu-memory/fit-the-budget", "solution.py")]


def without_figures(exercise: str, into: Path) -> Path:
    """A copy of the exercise whose @figure tests are gone (and whose pictures are therefore none)."""
    folder = into / exercise
    shutil.copytree(REPO / "exercises" / exercise, folder)
    for path in (folder / "checks").glob("test_*.py"):
        tree = ast.parse(path.read_text())
        kept = [node for node in tree.body if not (isinstance(node, ast.FunctionDef) and any(
            "figure" in ast.unparse(d) for d in node.decorator_list))]
        if not any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_") for n in kept):
            path.unlink()
            continue
        path.write_text(ast.unparse(ast.Module(body=kept, type_ignores=[])))
    return folder


def grade(exercise: str | Path, file: Path) -> dict:
    proc = subprocess.run([str(Path(sys.executable).with_name("grader")), "check", str(exercise), str(file), "--json",
                           "--sandbox", "local"], capture_output=True, text=True, cwd=REPO, timeout=600)
    return json.loads(proc.stdout)


def draw_times(results: list[dict]) -> list[tuple[float, float]]:
    """(ms with pictures, ms without) per result, median of 20 renders each, in Chromium."""
    from playwright.sync_api import sync_playwright

    script = (REPO / "platform/academy/static/figures.js").read_text()
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page()
        page.set_content("<main id='box'></main>")
        page.add_script_tag(content=script)
        times = []
        for result in results:
            bare = {**result, "trace": None, "figures": []}
            pair = []
            for variant in (result, bare):
                pair.append(page.evaluate("""(result) => {
                    const box = document.getElementById('box'), runs = [];
                    for (let i = 0; i < 20; i++) {
                      const start = performance.now();
                      const list = document.createElement('ul');
                      for (const c of result.checks) list.append(Object.assign(document.createElement('li'),
                                                                          {textContent: c.title + c.message}));
                      box.replaceChildren(list, ...window.academyFigures.render(result, () => {}));
                      box.getBoundingClientRect();  // layout, as the page does before painting
                      runs.push(performance.now() - start);
                    }
                    runs.sort((a, b) => a - b);
                    return runs[10];
                }""", variant))
            times.append(tuple(pair))
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows, results = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for exercise, name in CASES:
            bare = without_figures(exercise, Path(tmp))
            file = REPO / "exercises" / exercise / name
            with_s, without_s = [], []
            for _ in range(args.rounds):  # alternate, so drift in the machine's load hits both
                result = grade(exercise, file)
                with_s.append(result["duration_s"])
                without_s.append(grade(bare, file)["duration_s"])
            size = len(json.dumps({"trace": result.get("trace"), "figures": result.get("figures")}))
            results.append(result)
            rows.append((exercise, name, size, statistics.median(with_s), statistics.median(without_s)))
    draws = draw_times(results)
    print(f"{'exercise':38} {'file':28} {'pictures':>9} {'grading with':>13} {'without':>8} {'added':>7} "
          f"{'draw with':>10} {'without':>8}")
    for (exercise, name, size, with_s, without_s), (draw_with, draw_without) in zip(rows, draws):
        print(f"{exercise:38} {name:28} {size / 1024:7.1f}KB {with_s:12.2f}s {without_s:7.2f}s "
              f"{with_s - without_s:+6.2f}s {draw_with:8.1f}ms {draw_without:6.1f}ms")


if __name__ == "__main__":
    main()
