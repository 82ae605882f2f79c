#!/usr/bin/env python3
"""Checks the links and the text of a generated HTML site.

broken_links: for every .html file under the site folder, the relative targets of href/src/data
attributes must exist and, for a #fragment into an .html page, that page must have an element
with that id (or an <a name=...>). Links to other hosts (http:, https:, mailto:, ...) are not
followed: the site must work offline, and a broken web link is not a broken site.

misdirected_links: given, per page, the links its Markdown source makes (their text and the page
each must land on), every one must appear in the page's contents as a link with that text to that
page. This catches a link Doxygen resolved to another page of the same file name (a README.md
link landing on the front page) and a link dropped to plain text.

literal_markdown: no Markdown syntax may survive into a page's text outside code: **, __ or * used
as emphasis, a pair of backticks, or "](" of a link. Each is a construct Doxygen did not translate.
Nor may an HTML entity show as text anywhere in a page's contents, code included (&quot; seen by
the reader means it was escaped twice).

Usage: check_links.py SITE_DIR      broken_links and literal_markdown (misdirected_links needs the
                                    Markdown sources: build_site.py --check runs all three);
                                    exit 0 when all pass, 1 otherwise (each problem listed)
       check_links.py --self-test   plants one defect of each kind in a small site and checks that
                                    each check reports it, and that a clean site passes
"""
import html.parser
import os
import re
import sys
import tempfile
import urllib.parse

LINK_ATTRIBUTES = {"href", "src", "data"}


# Elements whose text is code (or script), where Markdown syntax is expected and left alone.
CODE_TAGS = {"code", "pre", "tt", "kbd", "samp", "script", "style"}
# Elements that end a run of text: Markdown syntax never spans two of them.
BLOCK_TAGS = {"p", "li", "td", "th", "tr", "dd", "dt", "div", "h1", "h2", "h3", "h4", "h5", "h6",
              "br", "table", "ul", "ol", "details", "summary", "blockquote"}
LITERAL_MARKDOWN = [
    ("'**'", re.compile(r"\*\*")),
    ("'](' of a link", re.compile(r"(?<!\[)\]\(")),  # not C++'s operator[]()
    ("a pair of backticks", re.compile(r"`[^`]+`")),
    ("'__' as emphasis", re.compile(r"(?<![\w])__(?=[^\s_])|(?<=[^\s_])__(?!\w)")),
    # Opening after a space or an opening bracket/quote, closing before a space or punctuation:
    # a product such as (out-1)*stride + dilation*(kernel-1) is not emphasis.
    ("'*' as emphasis", re.compile(r"(?<![^\s(\"'])\*(?=[^\s*])[^*]*?(?<=[^\s*])\*"
                                   r"(?![^\s).,;:!?\"'])")),
]
# An entity the reader sees as text (code included): it was escaped twice on its way.
SHOWN_ENTITY = re.compile(r"&(?:quot|amp|lt|gt|nbsp|#\d+|#x[0-9a-fA-F]+);")
MATH = re.compile(r"\\\([\s\S]*?\\\)|\\\[[\s\S]*?\\\]")  # MathJax's delimiters


class PageScanner(html.parser.HTMLParser):
    """Collects the anchors a page defines, the links it makes, the text and target of each link
    in its contents, and its runs of text outside code."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.anchors = set()
        self.links = []  # (line, target)
        self.content_links = []  # (text, target) of each <a href> inside <div class="contents">
        self.texts = []  # (line, text) of each run of text outside code, in the contents
        self.entities = []  # (line, entity) shown as text anywhere in the contents
        self.divs = []  # for each open <div>: (is the contents, is a code fragment)
        self.in_code = 0
        self.link = None  # [href, text] of the <a href> we are in
        self.run = None  # [line, text] of the run of text we are in

    def inside(self, which):
        return any(div[which] for div in self.divs)

    def end_run(self):
        if self.run and self.run[1].strip():
            self.texts.append((self.run[0], self.run[1]))
        self.run = None

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.anchors.add(value)
            elif name in LINK_ATTRIBUTES and tag != "form":
                self.links.append((self.getpos()[0], value.strip()))
        classes = (dict(attrs).get("class") or "").split()
        if tag == "div":
            self.divs.append(("contents" in classes, "fragment" in classes))
        if tag in CODE_TAGS:
            self.in_code += 1
        if tag in BLOCK_TAGS:
            self.end_run()
        if tag == "a" and dict(attrs).get("href") and self.inside(0):
            self.link = [dict(attrs)["href"].strip(), ""]

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in ("br",):
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "div" and self.divs:
            self.divs.pop()
        if tag in CODE_TAGS and self.in_code:
            self.in_code -= 1
        if tag in BLOCK_TAGS:
            self.end_run()
        if tag == "a" and self.link:
            self.content_links.append((" ".join(self.link[1].split()), self.link[0]))
            self.link = None

    def handle_data(self, data):
        if self.link:
            self.link[1] += data
        if self.inside(0):
            self.entities += [(self.getpos()[0], e) for e in SHOWN_ENTITY.findall(data)]
        if self.in_code or self.inside(1) or not self.inside(0):
            return
        if self.run is None:
            self.run = [self.getpos()[0], ""]
        self.run[1] += data


def is_external(target):
    parsed = urllib.parse.urlsplit(target)
    return bool(parsed.scheme) or target.startswith("//")


def scan(path, cache):
    if path not in cache:
        scanner = PageScanner()
        with open(path, encoding="utf-8", errors="replace") as f:
            scanner.feed(f.read())
        cache[path] = scanner
    return cache[path]


def broken_links(site_dir):
    """Returns a list of 'page:line: target (reason)' strings, one per broken link."""
    pages = []
    for folder, _, files in os.walk(site_dir):
        pages += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".html")]
    cache = {}
    problems = []
    for page in sorted(pages):
        for line, target in scan(page, cache).links:
            if not target or is_external(target):
                continue
            parts = urllib.parse.urlsplit(target)
            if parts.path:
                resolved = os.path.normpath(
                    os.path.join(os.path.dirname(page), urllib.parse.unquote(parts.path)))
            else:
                resolved = page  # "#anchor" points into the page itself
            where = f"{os.path.relpath(page, site_dir)}:{line}: {target}"
            if not os.path.exists(resolved):
                problems.append(f"{where} (no such file)")
            elif parts.fragment and resolved.endswith(".html"):
                anchor = urllib.parse.unquote(parts.fragment)
                if anchor not in scan(resolved, cache).anchors:
                    problems.append(f"{where} (no anchor '{anchor}' in that page)")
    return pages, problems


def misdirected_links(site_dir, expected):
    """Links that do not land where their Markdown source says.

    expected maps a page (file name under site_dir) to the links its source makes, as
    (text, page file it must land on, the target written in the source). Each must be matched by
    its own link in the page's contents with that text and that file; links with the same text
    are matched as a multiset, so two links "4" to different chapters are both checked.
    """
    problems = []
    for page, links in sorted(expected.items()):
        path = os.path.join(site_dir, page)
        if not os.path.exists(path):
            problems.append(f"{page}: no such page")
            continue
        found = {}
        for text, href in scan(path, {}).content_links:
            found.setdefault(text, []).append(urllib.parse.urlsplit(href).path)
        for text, want, target in links:
            text = " ".join(text.split())
            hrefs = found.get(text, [])
            if want in hrefs:
                hrefs.remove(want)
            elif hrefs:
                problems.append(f"{page}: link '{text}' ({target}) lands on {hrefs[0]}, "
                                f"not on {want}")
            else:
                problems.append(f"{page}: link '{text}' ({target}) is missing: dropped, or "
                                f"its text changed (expected a link to {want})")
    return problems


def literal_markdown(site_dir, pages=None):
    """Markdown syntax left in the text (outside code and math) of the contents of the pages."""
    problems = []
    for page in sorted(pages if pages is not None else os.listdir(site_dir)):
        if not page.endswith(".html"):
            continue
        scanner = scan(os.path.join(site_dir, page), {})
        for line, entity in scanner.entities:
            problems.append(f"{page}:{line}: the entity {entity} shows as text (escaped twice)")
        for line, text in scanner.texts:
            text = MATH.sub(" ", text)
            for what, pattern in LITERAL_MARKDOWN:
                match = pattern.search(text)
                if match:
                    start = max(0, match.start() - 30)
                    excerpt = " ".join(text[start:match.end() + 30].split())
                    problems.append(f"{page}:{line}: {what} left as Markdown in '...{excerpt}...'")
    return problems


SELF_TEST_PAGES = {
    "index.html": '<div class="contents"><p id="top">Front page. <a href="list.html">chapter '
                  'list</a> <a href="list.html#part">a part</a> <code>**kept** `x`</code></p>'
                  '<div class="fragment">a **b** `c`</div><p>a * b * c, lab_bench__x, \\(a*b*c\\)'
                  '</p></div>',
    "list.html": '<div class="contents"><h2 id="part">Part</h2><p><a href="index.html">home</a> '
                 '<a href="folder.html">exercises/</a></p></div>',
    "folder.html": '<div class="contents"><p>Files.</p></div>',
}
SELF_TEST_EXPECTED = {"index.html": [("chapter list", "list.html", "README.md")],
                      "list.html": [("exercises/", "folder.html", "../exercises/")]}
# Each defect: (page, text replaced, replacement, the check that must report it).
SELF_TEST_DEFECTS = [
    ("index.html", 'href="list.html#part"', 'href="list.html#nowhere"', "broken_links"),
    ("index.html", 'href="list.html">chapter', 'href="index.html">chapter', "misdirected_links"),
    ("list.html", '<a href="folder.html">exercises/</a>', "exercises/", "misdirected_links"),
    ("list.html", "<p><a", "<p>**<b>bold</b>** <a", "literal_markdown"),
    ("list.html", "<p><a", "<p>`relu` <a", "literal_markdown"),
    ("list.html", "<p><a", "<p>see [the list](list.md) <a", "literal_markdown"),
    ("folder.html", "Files.", "Files __in__ it.", "literal_markdown"),
    ("folder.html", "Files.", "Files *in* it.", "literal_markdown"),
    ("folder.html", "Files.", "<pre>run &amp;quot;x&amp;quot;</pre>", "literal_markdown"),
]


def all_checks(site_dir, expected):
    """{check name: its problems} for the three checks of this module."""
    return {"broken_links": broken_links(site_dir)[1],
            "misdirected_links": misdirected_links(site_dir, expected),
            "literal_markdown": literal_markdown(site_dir)}


def self_test():
    """Returns a list of failures: a clean small site must pass every check, and each planted
    defect must be reported by its check and only by it."""
    failures = []
    for defect in [None] + SELF_TEST_DEFECTS:
        with tempfile.TemporaryDirectory() as site:
            for name, text in SELF_TEST_PAGES.items():
                if defect and defect[0] == name:
                    assert defect[1] in text, defect
                    text = text.replace(defect[1], defect[2], 1)
                with open(os.path.join(site, name), "w", encoding="utf-8") as f:
                    f.write(f"<html><body>{text}</body></html>")
            results = all_checks(site, SELF_TEST_EXPECTED)
        for check, problems in results.items():
            should_fail = bool(defect) and defect[3] == check
            if bool(problems) != should_fail:
                planted = f"planted {defect[2]!r}" if defect else "clean site"
                failures.append(f"{planted}: {check} reported {problems or 'nothing'}")
    return failures


def main(argv):
    if argv[1:] == ["--self-test"]:
        failures = self_test()
        for failure in failures:
            print(f"check_links self-test: {failure}")
        print(f"check_links self-test: {len(SELF_TEST_DEFECTS)} planted defects, "
              f"{len(failures)} failures")
        return 1 if failures else 0
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_links.py SITE_DIR | --self-test", file=sys.stderr)
        return 2
    pages, problems = broken_links(argv[1])
    problems += literal_markdown(argv[1])
    if not pages:
        print(f"check_links: no .html files under {argv[1]}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem)
    print(f"check_links: {len(pages)} pages, {len(problems)} broken links or literal Markdown")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
