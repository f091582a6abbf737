"""The English Wikipedia sample shipped as gensim test data: MediaWiki XML -> documents of sentences.

package gensim 4.4.0 (pip download), file gensim/test/test_data/enwiki-...-shortened.bz2,
licence CC BY-SA (Wikipedia).
"""

from __future__ import annotations

import bz2
import html
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from .fetch import Archive
from .sentences import split_sentences

__all__ = ["WIKI_MEMBER", "parse_wiki", "strip_wiki_markup"]

WIKI_MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
_WIKI_END_SECTIONS = {
    "references",
    "external links",
    "see also",
    "notes",
    "further reading",
    "bibliography",
    "sources",
    "citations",
    "footnotes",
    "notes and references",
    "references and notes",
    "works cited",
    "primary sources",
    "secondary sources",
    "selected bibliography",
}
_LINK_NS_DROP = re.compile(
    r"^\s*:?\s*(?:file|image|media|category|wikipedia|wp|template|help|portal|special|wikt|wiktionary"
    r"|s|q|commons|meta|[a-z]{2,3}(?:-[a-z]{2,8})?)\s*:",
    re.I,
)


def _simple_template(body: str) -> str:
    """Text for the few templates that carry prose; others vanish."""
    parts = [p.strip() for p in body.split("|")]
    name = parts[0].lower().replace("_", " ")
    args = [p for p in parts[1:] if "=" not in p]
    if name in ("convert", "cvt") and len(args) >= 2:
        if len(args) >= 3 and args[1] in ("-", "to", "and", "or", "–"):
            return f"{args[0]} {args[1]} {args[2]} {args[3] if len(args) > 3 else ''}".strip()
        return f"{args[0]} {args[1]}"
    if name.startswith("lang-") and args:
        return args[-1]
    if name == "lang" and len(args) >= 2:
        return args[1]
    if name in ("nowrap", "nobr", "small", "big", "smallcaps", "sc") and args:
        return args[0]
    if name in ("'", "' \""):
        return "'"
    return ""


_FILE_LINK = re.compile(r"\[\[\s*:?\s*(?:file|image|media|category)\s*:", re.I)


def _drop_file_links(t: str) -> str:
    """Remove [[File:...]] / [[Image:...]] / [[Category:...]] with their captions, which may hold
    links and brackets of their own (balanced [[ ]] are counted)."""
    out, pos = [], 0
    while True:
        m = _FILE_LINK.search(t, pos)
        if not m:
            out.append(t[pos:])
            return "".join(out)
        out.append(t[pos : m.start()])
        depth, i = 1, m.end()
        while i < len(t) and depth:
            if t.startswith("[[", i):
                depth, i = depth + 1, i + 2
            elif t.startswith("]]", i):
                depth, i = depth - 1, i + 2
            elif t[i] == "\n" and t.startswith("\n\n", i):
                break  # unclosed: stop at the paragraph end
            else:
                i += 1
        pos = i


def _repeat(pattern: re.Pattern, repl, t: str, times: int) -> str:
    """Substitute until nothing matches (nested constructs go innermost first), at most ``times`` rounds."""
    for _ in range(times):
        t, n = pattern.subn(repl, t)
        if not n:
            break
    return t


_TEMPLATE = re.compile(r"\{\{([^{}]*)\}\}")
_TABLE = re.compile(r"\{\|(?:(?!\{\|).)*?\|\}", re.S)
_INTERNAL_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")


def _drop_blocks(t: str) -> str:
    """Remove comments, <ref>s, non-prose tags, templates (keeping the few that carry prose),
    tables and File/Image/Category links."""
    t = re.sub(r"<!--.*?(?:-->|$)", "", t, flags=re.S)
    t = re.sub(r"<ref[^>/]*/>", "", t, flags=re.I)
    t = re.sub(r"<ref\b[^>]*>.*?</ref\s*>", "", t, flags=re.I | re.S)
    t = re.sub(
        r"<(math|gallery|timeline|score|syntaxhighlight|source|pre|imagemap|chem|graph|hiero)\b[^>]*>.*?</\1\s*>",
        "",
        t,
        flags=re.I | re.S,
    )
    t = _repeat(_TEMPLATE, lambda m: _simple_template(m.group(1)), t, 50)
    t = re.sub(r"\{\{|\}\}", "", t)  # unbalanced leftovers
    t = _repeat(_TABLE, "", t, 20)
    return _drop_file_links(t)


def _link_label(m: re.Match) -> str:
    """[[Target|label]] -> label, [[Target]] -> Target; links to other namespaces vanish."""
    inner = m.group(1)
    if _LINK_NS_DROP.match(inner):
        return ""
    label = inner.split("|")[-1] if "|" in inner else inner
    if not label.strip():  # the "pipe trick" [[Foo (bar)|]] -> Foo
        label = re.sub(r"\s*\(.*?\)\s*$", "", inner.split("|")[0])
    return label.lstrip("#:")


def _inline_to_text(t: str) -> str:
    """Links to their labels, bare URLs, bold/italic, magic words and HTML tags removed, entities
    unescaped."""
    t = _repeat(_INTERNAL_LINK, _link_label, t, 10)
    t = t.replace("[[", "").replace("]]", "")  # unbalanced leftovers
    # External links: [http://x label] -> label, bare URLs vanish.
    t = re.sub(r"\[(?:https?:|ftp:)?//[^\s\]]+\s*([^\]]*)\]", r"\1", t)
    t = re.sub(r"(?:https?|ftp)://\S+", "", t)
    t = re.sub(r"'{2,5}", "", t)  # bold / italic
    t = re.sub(r"__[A-Z]+__", "", t)  # __TOC__ and friends
    t = re.sub(r"</?[A-Za-z][^>]*>", "", t)  # any other HTML tag (content kept)
    t = html.unescape(t).replace("\u00a0", " ")
    return html.unescape(t).replace("\u00a0", " ")  # double-escaped entities (&amp;nbsp;)


def _prose_lines(t: str) -> list[str]:
    """Lines of prose up to the first end section; a heading becomes an empty line (a paragraph
    break); stray table rows and list items that are not sentences are dropped."""
    out = []
    for line in t.split("\n"):
        s = line.strip()
        h = re.match(r"^(=+)\s*(.*?)\s*\1\s*$", s)
        if h:
            if h.group(2).strip().lower() in _WIKI_END_SECTIONS:
                break
            out.append("")  # a heading ends a paragraph
            continue
        if s.startswith(("|", "!", "{|", "|}")):
            continue  # stray table rows
        if re.match(r"^[*#]", s) and not re.search(r"""[.!?]["')\]]*$""", s):
            continue  # list items that are not sentences (filmographies, link lists)
        s = re.sub(r"^[*#:;]+\s*", "", s)  # list / indent markers
        s = re.sub(r"\(\s*[,;]?\s*\)", "", s)  # "( )" left by removed templates
        s = re.sub(r"\s+([,.;:!?])", r"\1", s)
        s = re.sub(r"[ \t]{2,}", " ", s).strip()
        out.append(s)
    return out


def strip_wiki_markup(text: str) -> str:
    """MediaWiki source -> plain text paragraphs (one a line). Our own regexes, no parser library.

    Removes comments, <ref>s, templates (nested), tables, File/Image/Category links, headings and
    everything from a "References"/"External links"/"See also" heading on; keeps link labels,
    external link labels, list item text; unescapes entities.
    """
    t = _inline_to_text(_drop_blocks(text.replace("\r\n", "\n")))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(_prose_lines(t))).strip()


def _wiki_documents(xml_bytes: bytes) -> Iterator[tuple[str, str, list[str]]]:
    """(id, title, sentences) for each main-namespace, non-redirect page."""
    ns = ""
    for event, el in ET.iterparse(io.BytesIO(xml_bytes), events=("start", "end")):
        if event == "start" and el.tag.endswith("mediawiki") and el.tag.startswith("{"):
            ns = el.tag[: el.tag.index("}") + 1]
        if event != "end" or el.tag != ns + "page":
            continue
        title = el.findtext(ns + "title") or ""
        page_ns = el.findtext(ns + "ns") or "0"
        pid = el.findtext(ns + "id") or title
        text = el.findtext(f"{ns}revision/{ns}text") or ""
        redirect = el.find(ns + "redirect") is not None or re.match(r"\s*#redirect", text, re.I)
        el.clear()
        if redirect or page_ns != "0" or not text.strip():
            continue
        sentences = []
        for par in strip_wiki_markup(text).split("\n"):
            for s in split_sentences(par):
                # Leftovers of removed markup (captions, list fragments) are short: keep real sentences.
                if len(s.split()) >= 4 and re.search(r"[A-Za-z]{2}", s):
                    sentences.append(s)
        if sentences:
            yield pid, title, sentences


def parse_wiki(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    """(id, title, sentences) of each article in the bz2 XML dump ``member`` of the wheel at ``path``."""
    arc = Archive(path)
    try:
        data = bz2.decompress(arc.read(arc.find(member)))
    finally:
        arc.close()
    yield from _wiki_documents(data)
