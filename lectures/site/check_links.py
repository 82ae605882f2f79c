#!/usr/bin/env python3
"""Checks that every internal link of a generated HTML site resolves.

For every .html file under the site folder it collects the relative targets of href/src/data
attributes and checks that the file exists and, for a #fragment into an .html page, that the page
has an element with that id (or an <a name=...>). Links to other hosts (http:, https:, mailto:,
...) are not followed: the site must work offline, and a broken web link is not a broken site.

Usage: check_links.py SITE_DIR      exit 0 when every link resolves, 1 otherwise (each one listed)
"""
import html.parser
import os
import sys
import urllib.parse

LINK_ATTRIBUTES = {"href", "src", "data"}


class PageScanner(html.parser.HTMLParser):
    """Collects the anchors a page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.anchors = set()
        self.links = []  # (line, target)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.anchors.add(value)
            elif name in LINK_ATTRIBUTES and tag != "form":
                self.links.append((self.getpos()[0], value.strip()))

    handle_startendtag = handle_starttag


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


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_links.py SITE_DIR", file=sys.stderr)
        return 2
    pages, problems = broken_links(argv[1])
    if not pages:
        print(f"check_links: no .html files under {argv[1]}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem)
    print(f"check_links: {len(pages)} pages, {len(problems)} broken links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
