"""The benchmark card (``leaderboard/benchmark_card.md``, the same text as docs/BENCHMARK_CARD.md) as HTML for
the site's ``benchmark-card.html``. The card uses a small part of Markdown only: ``#`` headings, paragraphs,
``-`` lists, pipe tables, ``**bold**`` and ``code``; everything else is plain text. All text is escaped."""

from __future__ import annotations

import html
import re

from focus_eval.resources import resource_dir

CARD_FILE = "benchmark_card.md"
_INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`")


def card_text() -> str:
    return (resource_dir("leaderboard") / CARD_FILE).read_text(encoding="utf-8")


def inline(text: str) -> str:
    """Escaped text with ``**bold**`` and ``code`` spans."""
    out, at = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[at:match.start()]))
        bold, code = match.groups()
        out.append(f"<strong>{html.escape(bold)}</strong>" if bold is not None else f"<code>{html.escape(code)}</code>")
        at = match.end()
    return "".join(out) + html.escape(text[at:])


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _blocks(text: str) -> list[list[str]]:
    """Groups of lines separated by blank lines; a heading is a block of its own."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            blocks.append([line] if line.startswith("#") else [])
            if line.startswith("#"):
                blocks.append([])
        else:
            blocks[-1].append(line)
    return [b for b in blocks if b]


def _block_html(block: list[str]) -> str:
    first = block[0]
    if first.startswith("#"):
        level = min(len(first) - len(first.lstrip("#")), 6)
        return f"<h{level}>{inline(first.lstrip('#').strip())}</h{level}>"
    if first.startswith("|"):
        head, body = _cells(first), [_cells(r) for r in block[2:]]
        rows = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in body)
        header = "".join(f"<th>{inline(c)}</th>" for c in head)
        # wrapped as every wide table of the site: it scrolls inside its box instead of widening the page
        return (f'<div class="table-wrap"><table class="data"><thead><tr>{header}</tr></thead>'
                f"<tbody>{rows}</tbody></table></div>")
    if first.startswith("- "):
        items, current = [], []
        for line in block:
            if line.startswith("- ") and current:
                items.append(" ".join(current))
                current = []
            current.append(line[2:].strip() if line.startswith("- ") else line.strip())
        items.append(" ".join(current))
        return "<ul>" + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>"
    return f"<p>{inline(' '.join(line.strip() for line in block))}</p>"


def card_html(text: str | None = None) -> str:
    """The card's body as HTML (without the page around it)."""
    return "\n".join(_block_html(b) for b in _blocks(card_text() if text is None else text))
