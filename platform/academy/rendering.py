"""The course's text as HTML: Markdown (sanitised by nh3), highlighted code (Pygments), and text shown in English
on another language's page (`Untranslated`, the `marked` filter). The libraries are imported on first use."""
from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

if TYPE_CHECKING:  # imported on first use: commands that never show the course need none of them
    from markdown_it import MarkdownIt




_ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "code", "pre",
                 "span", "a", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "div",
                 "img", "del", "sup", "sub"}
_ALLOWED_ATTRIBUTES = {"*": {"class"}, "a": {"href", "title"}, "img": {"src", "alt", "title"},
                       "th": {"align"}, "td": {"align"}}


@cache
def _formatter(style: str = "default") -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="highlight", nowrap=True, style=style)


def _tokens(code: str, lang: str, **options: Any) -> str:
    """`code` as Pygments' escaped HTML spans (classes styled by static/highlight.css), no wrapper."""
    from pygments import highlight
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang or "text", **options)
    except ClassNotFound:
        lexer = get_lexer_by_name("text", **options)
    return highlight(code, lexer, _formatter())


def _highlight(code: str, lang: str, _attrs: str) -> str:
    # markdown-it wraps the callback's output in <pre><code> unless it already starts with "<pre".
    return highlight_code(code, lang)


def highlight_code(code: str, lang: str = "python") -> str:
    """A block of code as a card's fenced code is shown: `<pre class="highlight"><code>` and Pygments' spans
    (the worked solution's code, the cards' code blocks). Safe as is: Pygments escapes the code."""
    return f'<pre class="highlight"><code>{_tokens(code, lang)}</code></pre>\n'


def code_spans(text: str) -> Markup:
    """Prose that writes code between `backticks` (quiz questions, options, explanations): the prose escaped, each
    code span highlighted as Python the way a card's code is, in `<code class="highlight">`."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code in it, shown as written
        return escape(text)
    html = [escape(part) if i % 2 == 0 else
            Markup('<code class="highlight">%s</code>') % Markup(_tokens(part, "python").rstrip("\n"))
            for i, part in enumerate(parts)]
    return Markup("").join(html)


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"highlight": _highlight, "html": False}).enable("table")


def render_markdown(text: str) -> str:
    """Markdown to HTML that is safe to put in a page as-is (sanitised by nh3)."""
    import nh3

    return nh3.clean(_markdown().render(text), tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES,
                     url_schemes={"http", "https", "mailto"})


def pygments_css() -> str:
    """static/highlight.css: the light palette, and github-dark in dark mode (academy.css, static/theme.js)."""
    dark = _formatter("github-dark")
    return f"{_formatter().get_style_defs('.highlight')}\n{dark.get_style_defs(':root[data-theme=dark] .highlight')}"


class Untranslated(str):
    """English text on a page in another language, shown because no translation file gives it. Templates show
    it through the `marked` filter, which tells browsers and screen readers it is English."""


def marked(text: Any) -> Markup:
    """The `marked` template filter: the text, escaped, inside `<span lang="en" dir="ltr">` where it is
    Untranslated (the page's notice says in words what this says in markup)."""
    if isinstance(text, Untranslated):
        return Markup('<span lang="en" dir="ltr">%s</span>') % str(text)
    return escape(text)
