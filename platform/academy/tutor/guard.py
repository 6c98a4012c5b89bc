"""The answer guard: a small model does not reliably obey "never write the solution", so the server holds back
what could reproduce it and drops it when it does.

Text is judged line by line as it streams. Prose goes out as it comes; a line is held while it could still be
code of the solution (its start, names aside, begins one of the solution's lines), or while it is inside a
fenced code block (the whole block is held until it closes), or while it holds a `code span`. Then:
- a run of 3 or more consecutive lines that each are a non-trivial line of the worked solution (whitespace,
  comments and local names aside) is dropped, fenced or not, and so is a block that writes the exercise's
  function (`def ENTRY(`) with a body of 3 or more lines;
- a line that quotes an unopened hint (one of its `code spans`, or 8 consecutive words of it) is dropped.
Each drop is replaced by one plain sentence that says what was removed and why.
"""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

RUN_TO_DROP = 3  # consecutive solution lines
HINT_WORDS = 8  # consecutive words of an unopened hint
NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
FENCE = "```"


def normalize(line: str) -> str:
    """A line of code with whitespace, comments and local names aside: `out = model(x)` and `y = net(z)` read
    the same, `scaler.scale(loss).backward()` keeps its attributes (what the solution is made of)."""
    code = re.sub(r"#.*$", "", line.replace("`", ""))
    code = NAME.sub(lambda m: m.group(0) if keyword.iskeyword(m.group(0)) else "N", code)
    return re.sub(r"\s+", "", code)


def non_trivial(normalized: str) -> bool:
    """A line that says something particular: an attribute call or a statement keyword, not `N=N(N)`."""
    return len(normalized) >= 8 and bool(re.search(r"\.\w|^(with|def|for|while|if|return)N", normalized))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def _shingles(text: str, size: int) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i:i + size]) for i in range(len(words) - size + 1)}


@dataclass
class Guard:
    solution: str = ""
    hints: list[str] = field(default_factory=list)
    entry: str | None = None
    removed_solution: str = "[Code removed: it repeated the worked solution. Try writing it yourself first.]"
    removed_hint: str = "[Removed: it quoted a hint you have not opened yet.]"
    dropped: int = 0  # how many times something was removed

    def __post_init__(self) -> None:
        self._solution_lines = {normalize(line) for line in self.solution.splitlines()} - {""}
        self._prefixes = {n for n in self._solution_lines if non_trivial(n)}
        spans = [s for hint in self.hints for s in re.findall(r"`([^`]{12,})`", hint)]
        self._hint_spans = {re.sub(r"\s+", "", s) for s in spans}
        self._hint_shingles = set().union(*(_shingles(h, HINT_WORDS) for h in self.hints)) if self.hints else set()
        self._partial = ""  # the current line so far
        self._partial_sent = 0  # how much of it went out already (prose)
        self._held: list[str] = []  # complete lines held (a fence's block, or a run of solution lines)
        self._in_fence = False
        self._out: list[str] = []
        self._marked = False  # a removal note for the current held run was written

    # -- judging one line

    def _solution_line(self, line: str) -> bool:
        return normalize(line) in self._solution_lines

    def _quotes_hint(self, line: str) -> bool:
        flat = re.sub(r"\s+", "", line.replace("`", ""))
        return any(span.replace("`", "") in flat for span in self._hint_spans) or \
            bool(self._hint_shingles & _shingles(line, HINT_WORDS))

    def _may_be_code(self, partial: str) -> bool:
        """Whether the line so far must be held: inside a fence, a `code span`, only indentation yet, or (names
        aside) the start of one of the solution's non-trivial lines."""
        if self._in_fence or "`" in partial or not partial.strip():
            return True
        normalized = normalize(partial)
        return any(line.startswith(normalized) for line in self._prefixes)

    # -- streaming

    def feed(self, text: str) -> str:
        """Take the next piece of the model's answer; return what may be shown now."""
        self._out = []
        for piece in re.split(r"(\n)", text):
            if piece == "\n":
                self._end_line()
            elif piece:
                self._partial += piece
                self._maybe_send_partial()
        return "".join(self._out)

    def finish(self) -> str:
        """The answer ended (done, cut at max_tokens, stopped): what is still held, judged."""
        self._out = []
        if self._partial:
            self._end_line(final=True)
        self._in_fence = False
        self._release_held()
        return "".join(self._out)

    def _maybe_send_partial(self) -> None:
        if not self._partial_sent and (self._held or self._may_be_code(self._partial)):
            return
        if self._quotes_hint(self._partial):
            return
        self._out.append(self._partial[self._partial_sent:])
        self._partial_sent = len(self._partial)

    def _end_line(self, final: bool = False) -> None:
        line, sent = self._partial, self._partial_sent
        self._partial, self._partial_sent = "", 0
        newline = "" if final else "\n"
        if line.strip().startswith(FENCE):
            if self._in_fence:  # the block closes: judge it whole
                self._held.append(line + newline)
                self._in_fence = False
                self._judge_block()
            else:
                self._release_held()
                self._in_fence = True
                self._held.append(line + newline)
            return
        if self._in_fence:
            self._held.append(line + newline)
            return
        if sent:  # prose that already went out: the rest of it too, unless it turned into a hint's words
            if self._quotes_hint(line):
                self._out.append(" " + self.removed_hint + newline)
                self.dropped += 1
            else:
                self._out.append(line[sent:] + newline)
            self._release_held()
            return
        if self._solution_line(line) or (not line.strip() and self._held):
            self._held.append(line + newline)
            self._judge_run(final=final)
            return
        self._release_held()
        if self._quotes_hint(line):
            self._out.append(self.removed_hint + newline)
            self.dropped += 1
        else:
            self._out.append(line + newline)

    def _run_length(self, lines: list[str]) -> int:
        """The longest run of consecutive non-trivial solution lines (blank and trivial ones in between
        neither count nor break it; any other line does)."""
        best = run = 0
        for line in lines:
            n = normalize(line)
            if not n or (n in self._solution_lines and not non_trivial(n)):
                continue
            if n in self._solution_lines:
                run += 1
                best = max(best, run)
            elif n not in (FENCE, FENCE + "python", FENCE + "N"):
                run = 0
        return best

    def _writes_entry(self, lines: list[str]) -> bool:
        if not self.entry:
            return False
        for i, line in enumerate(lines):
            if re.match(rf"\s*def\s+{re.escape(self.entry)}\s*\(", line):
                body = [x for x in lines[i + 1:] if x.strip() and not x.strip().startswith(FENCE)]
                return len(body) >= RUN_TO_DROP
        return False

    def _judge_run(self, final: bool) -> None:
        if self._marked:  # the rest of a run already dropped goes the same way
            self._held = []
        elif self._run_length(self._held) >= RUN_TO_DROP:
            if not self._marked:
                self._out.append(self.removed_solution + "\n")
                self.dropped += 1
                self._marked = True
            self._held = []

    def _judge_block(self) -> None:
        lines, self._held = self._held, []
        if self._run_length(lines) >= RUN_TO_DROP or self._writes_entry(lines):
            self._out.append(self.removed_solution + "\n")
            self.dropped += 1
            return
        if any(self._quotes_hint(line) for line in lines):
            self._out.append(self.removed_hint + "\n")
            self.dropped += 1
            return
        self._out.extend(lines)

    def _release_held(self) -> None:
        """Held lines that turned out harmless (the run stopped short of RUN_TO_DROP) go out; an unclosed
        fence's block at the end is judged as a block."""
        if self._in_fence:
            return
        lines, self._held = self._held, []
        self._marked = False
        if not lines:
            return
        if lines[0].strip().startswith(FENCE):
            self._held = lines
            self._judge_block()
            return
        if self._run_length(lines) >= RUN_TO_DROP:
            return
        self._out.extend(lines)
