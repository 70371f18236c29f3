"""Markdown to HTML for the training report (training.report writes it): the subset that report uses —
headings, paragraphs, pipe tables, bullet lists, images, `code` and **bold** — with everything escaped.

No Markdown library is installed with the service, and the report is ours: a full CommonMark parser
would buy nothing. Image sources are passed through `image_url` so that only files of the report
folder are linked (anything else is dropped).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape

_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_BULLET = re.compile(r"^\s*[-*]\s+")


def _inline(text: str, image_url: Callable[[str], str | None]) -> str:
    out, pos = [], 0
    for m in _IMAGE.finditer(text):
        out.append(_spans(text[pos : m.start()]))
        url = image_url(m.group(2))
        if url is not None:
            out.append(f'<img src="{escape(url)}" alt="{escape(m.group(1))}" loading="lazy">')
        pos = m.end()
    out.append(_spans(text[pos:]))
    return "".join(out)


def _spans(text: str) -> str:
    s = escape(text, quote=False)
    s = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", s)
    return _BOLD.sub(lambda m: f"<strong>{m.group(1)}</strong>", s)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def render(md: str, image_url: Callable[[str], str | None]) -> str:
    html: list[str] = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if m := re.match(r"(#{1,6})\s+(.*)", line):
            level = min(6, len(m.group(1)) + 1)  # the page owns <h1>
            html.append(f"<h{level}>{_inline(m.group(2), image_url)}</h{level}>")
            i += 1
        elif line.lstrip().startswith("|"):
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            body = [r for r in rows if not all(re.fullmatch(r":?-{3,}:?", c) for c in r if c)]
            head, rest = body[0], body[1:]
            html.append('<div class="table-wrap"><table class="report"><thead><tr>')
            html.extend(f"<th>{_inline(c, image_url)}</th>" for c in head)
            html.append("</tr></thead><tbody>")
            for r in rest:
                html.append("<tr>" + "".join(f"<td>{_inline(c, image_url)}</td>" for c in r) + "</tr>")
            html.append("</tbody></table></div>")
        elif _BULLET.match(line):
            html.append("<ul>")
            while i < len(lines) and _BULLET.match(lines[i]):
                item = _inline(_BULLET.sub("", lines[i]), image_url)
                html.append(f"<li>{item}</li>")
                i += 1
            html.append("</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"(#{1,6}\s|\s*\||\s*[-*]\s)", lines[i]):
                para.append(lines[i].strip())
                i += 1
            html.append(f"<p>{_inline(' '.join(para), image_url)}</p>")
    return "\n".join(html)
