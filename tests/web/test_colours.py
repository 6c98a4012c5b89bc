"""The stylesheet's text colours against the backgrounds they are drawn on, in both themes (WCAG AA: 4.5:1).

The browser tests' axe run sees only the verdicts a run happens to show: the quiz's options are shuffled per
learner, so the green "right" verdict (4.09:1 on the light page before it was darkened) failed only on the
draws whose first option was the right one."""
import re

import pytest

from tests.support.paths import REPO

CSS = (REPO / "platform" / "academy" / "static" / "academy.css").read_text()
THEMES = {"light": r":root \{(.*?)\}", "dark": r":root\[data-theme=dark\] \{(.*?)\}"}
# Each token used as `color:` on text, and the backgrounds that text sits on.
TEXT_ON = {"ok": ("bg", "surface", "ok-bg"), "bad": ("bg", "surface", "error-bg"), "ink": ("bg", "surface"),
           "muted": ("bg", "surface"), "ok-ink": ("ok-bg",), "error-ink": ("error-bg",)}


def palette(theme: str) -> dict[str, str]:
    block = re.search(THEMES[theme], CSS, re.S).group(1)
    return dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{3,6})\b", block))


def luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    digits = "".join(c * 2 for c in digits) if len(digits) == 3 else digits
    channels = [int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_contrast_formula_matches_known_pairs():
    assert contrast("#000", "#fff") == pytest.approx(21)
    assert contrast("#1f8a4c", "#f6f7fb") == pytest.approx(4.09, abs=0.01)


@pytest.mark.parametrize("theme", THEMES)
def test_every_text_colour_reads_on_its_backgrounds(theme):
    colours = palette(theme)
    poor = [f"--{text} on --{ground}: {contrast(colours[text], colours[ground]):.2f}"
            for text, grounds in TEXT_ON.items() for ground in grounds
            if contrast(colours[text], colours[ground]) < 4.5]
    assert not poor, f"{theme}: below 4.5:1: {poor}"
