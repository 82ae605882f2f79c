#!/usr/bin/env python3
"""Doxygen input filter for the course's Markdown: GitHub-flavoured source in, Doxygen markup out.

The chapters are written to read well on a code host (GitHub's Markdown view). Some things read
differently in Doxygen 1.9, so this filter translates them while the site is built, and the
sources stay free of Doxygen-only markup:

* Math. GitHub renders `$...$` (or $`...`$) inline and ```math fenced blocks as display math;
  Doxygen wants \\f$...\\f$ and \\f[...\\f]. MathJax then typesets both the same way.
* Emphasis. Doxygen 1.9.4 opens ** or * only before a letter or digit (and a few signs), so bold
  that starts with a code span, a quote or a bracket kept its asterisks. Emphasis is found the way
  GitHub finds it and written as <b>...</b> (strong) or <em>...</em>, the tags Doxygen itself
  writes; Markdown inside (code spans, links, math) is translated as usual.
* Straight double quotes. Doxygen 1.9 prints the text between two " as it is, so a code span,
  emphasis, link or formula inside a quotation showed as source. In running text " is written as
  &quot; (the same character to the reader).
* Code spans. Doxygen 1.9 reads `word' inside a single-backtick span as a quotation and ends a
  span at its second line break; a span with an apostrophe is written in double backticks, and
  every span on one line.
* Answer blocks. Doxygen 1.9.4 mangles a <details> element whose content is separated by blank
  lines (which GitHub needs to render the Markdown inside it): it closes the element early and
  opens empty ones. Passing the <details>/<summary> tags through \\htmlonly[block] keeps them as
  they are, and the Markdown between them is rendered by Doxygen as usual.
* Links between Markdown pages become references to the page's label (@ref md_..., and index
  for the top-level README): Doxygen resolves a link by file name, so [chapter list](README.md)
  landed on the front page, the other README.md.
* Links to repository files the site has no page for. A folder with a README.md links to that
  README's page. A folder without one links to a page build_site.py generates for it (label
  folder_<path>, under "Repository folders" at the end of the navigation tree) that lists the
  folder's files, each linked to its page where the site has one: the reader gets the folder's
  contents rather than a dead end or plain text. A header of the common library links to its
  page; any other file (a source, the Doxyfile) becomes its name, unlinked, since the site does
  not publish sources. A link to a path that does not exist, or with a #fragment into another
  file, is left alone, so that Doxygen and the link check report it.

Fenced code blocks pass through untouched, and code spans keep their text. Doxygen runs this as
`python3 lectures/site/md_filter.py FILE` (FILTER_PATTERNS in lectures/Doxyfile) and reads stdout.
"""
import os
import re
import sys

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LIBRARY_HEADERS = os.path.join(REPO_ROOT, "common", "include")

LIST_MARKER = re.compile(r"^ {0,3}(?:[-+*]|\d+[.)])[ \t]")
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w.+-]*)")
HTML_BLOCK_TAG = re.compile(r"^\s*(</?details\b[^>]*>\s*(<summary>.*</summary>)?|<summary>.*</summary>)\s*$")
# One scan over a paragraph finds, leftmost first: inline math, a link, a code span, an image or
# HTML tag (kept), emphasis, or a straight double quote.
# Emphasis content: code spans whole, other characters one by one, and a line break only where
# the next line does not start a new block (list item, table row, heading, quote).
EMPHASIS_BODY = r"(?:`[^`\n]*`|\n(?![ \t]*(?:[-+*|#>][ \t]|\d+[.)][ \t]|\|))|[^`\n])+?"
INLINE = re.compile(
    r"(?P<math>\$`(?P<mtick>[^`]+)`\$|(?<![\\$\w])\$(?P<mplain>[^\s$](?:[^$]*[^\s$])?)\$(?![\w$]))"
    r"|(?P<link>(?<!!)\[(?P<text>(?:[^\[\]`]|`[^`]*`)*)\]\((?P<target>[^()\s]*)\))"
    r"|(?P<code>(?P<ticks>`+)[\s\S]+?(?P=ticks))"
    # Passed through whole, so that no emphasis is looked for inside: images and HTML tags.
    r"|(?P<verbatim>!\[[^\]]*\]\([^()\s]*\)|<[A-Za-z/][^<>]*>)"
    # Emphasis, GitHub's way: the opening run is not preceded by a word character or a backslash
    # and is followed by a non-space; the closing run is preceded by a non-space and not followed
    # by a word character. ** and __ are strong, * and _ emphasis.
    r"|(?<![\w\\*])(?P<strong>\*\*|__)(?=[^\s*_])(?P<sbody>" + EMPHASIS_BODY + r")"
    r"(?<=[^\s*_])(?P=strong)(?![\w*])"
    r"|(?<![\w\\*])(?P<em>\*|_)(?=[^\s*_])(?P<ebody>" + EMPHASIS_BODY + r")"
    r"(?<=[^\s*_])(?P=em)(?![\w*])"
    r'|(?P<quote>")')


def page_label(markdown_path):
    """The label Doxygen 1.9 gives the page of a Markdown file: md_ + its path, words joined by _.

    The top-level README is the site's main page (USE_MDFILE_AS_MAINPAGE), whose label is index.
    """
    if os.path.normpath(markdown_path) == os.path.join(REPO_ROOT, "README.md"):
        return "index"
    relative = os.path.splitext(os.path.relpath(markdown_path, REPO_ROOT))[0]
    return "md_" + re.sub(r"[^A-Za-z0-9]", "_", relative)


def folder_label(folder):
    """The label of the page build_site.py generates for a folder that has no README.md."""
    return "folder_" + re.sub(r"[^A-Za-z0-9]", "_", os.path.relpath(folder, REPO_ROOT))


def link_destination(target, source_dir):
    """Where the site sends the relative link target written in a file in source_dir.

    Returns (kind, label): ("page", label) for a Markdown page (a folder's README.md included),
    ("folder", label) for a folder without README.md (build_site.py generates its page),
    ("header", path below common/include) for a header of the common library, ("text", None) for
    a file the site has no page for, and (None, None) for a web link, an in-page anchor, a Doxygen
    reference, a link with a #fragment into another file, or a path that does not exist: those
    are left to Doxygen and to the link check.
    """
    if not target or "#" in target or re.match(r"^[a-zA-Z][\w+.-]*:|^@|^\\", target):
        return None, None
    resolved = os.path.normpath(os.path.join(source_dir, target))
    if not os.path.exists(resolved):
        return None, None
    if os.path.isdir(resolved):
        readme = os.path.join(resolved, "README.md")
        if os.path.isfile(readme):
            return "page", page_label(readme)
        return "folder", folder_label(resolved)
    if resolved.endswith(".md"):
        return "page", page_label(resolved)
    if resolved.endswith(".hpp") and resolved.startswith(LIBRARY_HEADERS + os.sep):
        return "header", os.path.relpath(resolved, LIBRARY_HEADERS)
    return "text", None


def link_words(text):
    """A link's text as the site shows it: Doxygen 1.9 prints backticks in it literally."""
    return re.sub(r"`([^`]*)`", r"\1", text)


def rewrite_link(text, target, source_dir, chapter_index, links=None):
    """The Doxygen form of the Markdown link [text](target) found in a file in source_dir.

    Links to Markdown pages and folders become explicit references to the page's label: left to
    Doxygen, a link to lectures/README.md landed on the front page, which is also a README.md.
    In the chapter index (lectures/README.md) a link to a page beside it becomes a \\subpage,
    so that the site's navigation tree lists the chapters under the index, in the index's order.
    """
    words = link_words(text)
    kind, label = link_destination(target, source_dir)
    if links is not None:
        links.append((text, target))
    if kind is None:
        return f"[{words}]({target})"  # left for Doxygen and the link check to judge
    if kind == "text":
        return text  # a source file or the like the site has no page for: its name, unlinked
    if kind == "header":
        return f"[{words}](@ref {label})"
    resolved = os.path.normpath(os.path.join(source_dir, target))
    if chapter_index and kind == "page" and os.path.dirname(resolved) == source_dir:
        title = words.replace('"', "'")
        return f'\\subpage {label} "{title}"'
    return f"[{words}](@ref {label})"


def rewrite_inline(line, source_dir, chapter_index, links=None):
    def replace(match):
        if match.group("math"):
            formula = match.group("mtick") or match.group("mplain")
            return f"\\f${formula}\\f$"
        if match.group("link"):
            return rewrite_link(match.group("text"), match.group("target"), source_dir,
                                chapter_index, links)
        if match.group("quote"):
            # Doxygen 1.9 prints the text between two straight double quotes as it is: code spans,
            # emphasis, links and math inside would show as Markdown source. The entity is the
            # same character to the reader and starts no quotation.
            return "&quot;"
        if match.group("strong") or match.group("em"):
            tag = "b" if match.group("strong") else "em"
            body = match.group("sbody") or match.group("ebody")
            return f"<{tag}>{rewrite_inline(body, source_dir, chapter_index, links)}</{tag}>"
        # Doxygen 1.9 ends a code span at its second line break; GitHub reads a line break in
        # one as a space, so the filter writes the span on one line.
        code = re.sub(r"[ \t]*\n[ \t]*", " ", match.group("code") or "")
        if match.group("ticks") == "`" and "'" in code:
            # Doxygen 1.9 reads `word' as a quotation (typographic quotes, no code span) and then
            # pairs the backticks left over wrongly; it does not do so inside double backticks.
            return f"`` {code[1:-1]} ``"
        if code:
            return code
        return match.group(0)  # an image or an HTML tag stays verbatim

    return INLINE.sub(replace, line)


def filter_markdown(lines, source_dir, chapter_index=False, links=None):
    """The Doxygen form of a Markdown file's lines; each link of its running text (code blocks and
    spans excluded) is appended to links as (text, target) when links is a list."""
    out = []
    paragraph = []  # lines of running text, rewritten together: a link or code span may wrap
    fence = None  # the fence string of the code block we are in, or None
    in_math = False
    # Indented code blocks (4 spaces after a blank line) pass through like fenced ones. Inside a
    # list an indented line after a blank one continues the item instead, so list context is
    # followed: a list marker opens it, a paragraph that starts in column 0 closes it.
    in_list = False
    indented_code = False
    previous_blank = True

    def flush():
        out.append(rewrite_inline("".join(paragraph), source_dir, chapter_index, links))
        paragraph.clear()

    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" \t").replace("\t", "    "))
        if indented_code and (not stripped or indent >= 4):
            out.append(line)
            continue
        indented_code = False
        starts_code = previous_blank and indent >= 4 and stripped and not in_list
        if not fence and not in_math and starts_code:
            flush()
            indented_code = True
            out.append(line)
            continue
        if not fence and not in_math and stripped:
            if LIST_MARKER.match(line):
                in_list = True
            elif indent == 0 and previous_blank:
                in_list = False
        previous_blank = not stripped
        if fence:
            if stripped.startswith(fence) and stripped.strip("`~") == "":
                fence = None
                line = "\\f]\n" if in_math else line
                in_math = False
            out.append(line)
            continue
        opening = FENCE.match(line)
        if opening or stripped == "$$" or in_math or HTML_BLOCK_TAG.match(line) or not stripped:
            flush()
        if opening:
            fence = opening.group(1)
            in_math = opening.group(2) == "math"
            out.append("\\f[\n" if in_math else line)
        elif stripped == "$$":
            out.append("\\f[\n" if not in_math else "\\f]\n")
            in_math = not in_math
        elif in_math:
            out.append(line)
        elif HTML_BLOCK_TAG.match(line):
            out.append(f"\\htmlonly[block]{stripped}\\endhtmlonly\n")
        elif not stripped:
            out.append(line)
        else:
            paragraph.append(line)
    flush()
    return out


def main(argv):
    if len(argv) != 2:
        print("usage: md_filter.py FILE.md   (writes the Doxygen form to stdout)", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        lines = f.readlines()
    path = os.path.abspath(argv[1])
    chapter_index = path == os.path.join(REPO_ROOT, "lectures", "README.md")
    sys.stdout.write("".join(filter_markdown(lines, os.path.dirname(path), chapter_index)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
