#!/usr/bin/env python3
"""Builds the lectures site into OUTPUT/html and, with --check, checks it as a test.

Steps: a generated page for each folder the Markdown links to that has no README.md (the list of
its files; md_filter.py links such folders there), Doxygen with lectures/Doxyfile (output and
warning log redirected to OUTPUT), a local copy of MathJax 2 from Debian's libjs-mathjax (the
site never loads anything from the web), and one clean-up Doxygen has no setting for: in the Markdown pages, a name in a code block that Doxygen
linked to a documented symbol loses its link unless it is qualified (`lab04::fold_batchnorm`),
because an unqualified `relu(...)` in a chapter's CUDA example is not lab 03's `relu`.

--check (the CTest test docs.links) then fails on any Doxygen warning, any broken internal link,
a link that does not land on the page generated from the file its Markdown names (or that was
dropped), Markdown syntax left in a page's text (all three in check_links.py, whose self-test with
planted defects runs too), a "check yourself" answer block that did not survive as a <details>
element with a summary and content, math left untranslated, or (where headless Chromium is
installed) a formula MathJax cannot typeset when the page is opened, e.g. a macro from an
extension the Doxyfile does not load. It exits 77 (skipped) where Doxygen or MathJax is not
installed.

Usage: build_site.py [--check] OUTPUT_DIR
"""
import fnmatch
import concurrent.futures
import html.parser
import os
import re
import shutil
import subprocess
import sys

import check_links
import md_filter

SITE_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(SITE_DIR, "..", ".."))
MATHJAX_DIR = "/usr/share/javascript/mathjax"  # Debian's libjs-mathjax (MathJax 2.7)
# What MathJax 2 loads for TeX input and HTML-CSS output (the settings in lectures/Doxyfile).
MATHJAX_PARTS = ["MathJax.js", "extensions", "jax/input/TeX", "jax/element", "jax/output/HTML-CSS",
                 "fonts/HTML-CSS/TeX/woff", "fonts/HTML-CSS/TeX/otf", "localization/en"]
SKIPPED = 77

CODE_LINK = re.compile(r'<a class="code[^"]*" href="[^"]*">([^<]*)</a>')


def doxyfile_setting(name):
    """The words of a setting in lectures/Doxyfile (continuation lines joined, quotes removed)."""
    with open(os.path.join(REPO_ROOT, "lectures", "Doxyfile"), encoding="utf-8") as f:
        text = re.sub(r"\\\n", " ", f.read())
    match = re.search(rf"^{name}\s*=(.*)$", text, re.MULTILINE)
    return [word.strip('"') for word in match.group(1).split()] if match else []


def markdown_sources():
    """The Markdown files Doxygen reads (INPUT, less EXCLUDE_PATTERNS), as absolute paths."""
    excluded = doxyfile_setting("EXCLUDE_PATTERNS")
    found = []
    for entry in doxyfile_setting("INPUT"):
        path = os.path.join(REPO_ROOT, entry)
        if os.path.isfile(path):
            found.append(path)
        for dirpath, _, files in os.walk(path) if os.path.isdir(path) else ():
            found += [os.path.join(dirpath, name) for name in sorted(files) if name.endswith(".md")]
    return [os.path.normpath(path) for path in found
            if not any(fnmatch.fnmatch(path, pattern) for pattern in excluded)]


def source_links(source):
    """The links of a Markdown source's running text, as (text, target)."""
    links = []
    with open(source, encoding="utf-8") as f:
        md_filter.filter_markdown(f.readlines(), os.path.dirname(source), links=links)
    return links


# Folder listings leave out what a build or an editor leaves behind.
NOT_LISTED = re.compile(r"^\.|^__pycache__$|^build$|\.pyc$")
LISTING_LIMIT = 300


def write_folder_pages(folders_dir, sources):
    """One page for each folder a source links to that has no README.md, and a page over them.

    A link to such a folder must take the reader somewhere: its page lists the folder's files
    (recursively), each linked to its page on the site where it has one (a README or another
    Markdown page, a header of the common library). md_filter.py links the folder to this page.
    """
    shutil.rmtree(folders_dir, ignore_errors=True)
    os.makedirs(folders_dir)
    folders = sorted({os.path.normpath(os.path.join(os.path.dirname(source), target))
                      for source in sources for _, target in source_links(source)
                      if md_filter.link_destination(target, os.path.dirname(source))[0]
                      == "folder"})
    pages = set(sources)
    for folder in folders:
        name = os.path.relpath(folder, REPO_ROOT) + "/"
        lines = [f"# {name} {{#{md_filter.folder_label(folder)}}}\n\n",
                 f"The folder `{name}` of the course's repository has no README of its own. "
                 "These are its files; those with a page on this site link to it.\n\n"]
        listed = []
        for dirpath, dirnames, files in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not NOT_LISTED.search(d))
            listed += [os.path.join(dirpath, f) for f in sorted(files) if not NOT_LISTED.search(f)]
        for path in listed[:LISTING_LIMIT]:
            shown = os.path.relpath(path, folder)
            kind, label = md_filter.link_destination(os.path.relpath(path, folder), folder)
            if path in pages:
                lines.append(f"- [{shown}](@ref {md_filter.page_label(path)})\n")
            elif kind == "header":
                lines.append(f"- [{shown}](@ref {label})\n")
            else:
                lines.append(f"- `{shown}`\n")
        if len(listed) > LISTING_LIMIT:
            lines.append(f"\nand {len(listed) - LISTING_LIMIT} more files.\n")
        with open(os.path.join(folders_dir, md_filter.folder_label(folder) + ".md"), "w",
                  encoding="utf-8") as f:
            f.writelines(lines)
    with open(os.path.join(folders_dir, "folders.md"), "w", encoding="utf-8") as f:
        f.write("# Repository folders {#folders}\n\nThe folders the pages link to that have no "
                "README of their own, each with a list of its files.\n\n")
        f.writelines(f"- \\subpage {md_filter.folder_label(folder)}\n" for folder in folders)
    return folders


def run_doxygen(output_dir):
    with open(os.path.join(REPO_ROOT, "lectures", "Doxyfile"), encoding="utf-8") as f:
        config = f.read()
    folders_dir = os.path.join(output_dir, "folders")
    write_folder_pages(folders_dir, markdown_sources())
    # The generated folder pages come last in INPUT, so last in the navigation tree.
    config += (f'\nOUTPUT_DIRECTORY = "{output_dir}"\nWARN_LOGFILE = "{output_dir}/warnings.log"\n'
               f'INPUT += "{folders_dir}"\n')
    shutil.rmtree(os.path.join(output_dir, "html"), ignore_errors=True)  # no stale pages
    os.makedirs(output_dir, exist_ok=True)
    subprocess.run(["doxygen", "-"], input=config, text=True, cwd=REPO_ROOT, check=True)
    with open(os.path.join(output_dir, "warnings.log"), encoding="utf-8") as f:
        return [line.rstrip() for line in f if line.strip()]


def copy_mathjax(html_dir):
    for part in MATHJAX_PARTS:
        source, target = os.path.join(MATHJAX_DIR, part), os.path.join(html_dir, "mathjax", part)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)


def unlink_unqualified_code_names(html_dir):
    def keep_if_qualified(match):
        return match.group(0) if "::" in match.group(1) else match.group(1)

    for name in os.listdir(html_dir):
        if name.startswith("md_") or name == "index.html":
            path = os.path.join(html_dir, name)
            with open(path, encoding="utf-8") as f:
                page = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(CODE_LINK.sub(keep_if_qualified, page))


class AnswerBlocks(html.parser.HTMLParser):
    """Finds each <details> element: whether it starts with a <summary> and has content after."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks = []  # [has_summary, content_tags]
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.blocks.append([False, 0])
            self.depth += 1
        elif self.depth and tag == "summary":
            self.blocks[-1][0] = self.blocks[-1][1] == 0
        elif self.depth and tag in ("p", "ol", "ul", "li", "table", "div", "pre"):
            self.blocks[-1][1] += 1

    def handle_endtag(self, tag):
        if tag == "details":
            self.depth -= 1


def answer_block_problems(html_dir):
    """Each Markdown source's <details> blocks must come out whole in its page."""
    problems = []
    for folder in ("lectures", "exercises"):
        for dirpath, _, files in os.walk(os.path.join(REPO_ROOT, folder)):
            for name in sorted(files):
                if not name.endswith(".md"):
                    continue
                source = os.path.join(dirpath, name)
                with open(source, encoding="utf-8") as f:
                    expected = len(re.findall(r"^\s*<details\b", f.read(), re.MULTILINE))
                page = os.path.join(html_dir, page_file(source))
                if not os.path.exists(page):
                    problems.append(f"{page_file(source)}: no page for {source}")
                    continue
                scanner = AnswerBlocks()
                with open(page, encoding="utf-8") as f:
                    scanner.feed(f.read())
                rel = os.path.relpath(source, REPO_ROOT)
                if len(scanner.blocks) != expected:
                    problems.append(f"{rel}: {expected} <details> blocks in the source, "
                                    f"{len(scanner.blocks)} in the page")
                for i, (has_summary, content) in enumerate(scanner.blocks, 1):
                    if not has_summary or content == 0:
                        problems.append(f"{rel}: answer block {i} lost its summary or content")
    return problems


def page_file(markdown_path):
    return md_filter.page_label(markdown_path) + ".html"


def header_pages(header):
    """The names Doxygen 1.9 may give a header's page: by its file name, or by its path below
    common/include where the file name is not unique ('_' doubled, '.' as _8, '/' as _2)."""
    def escape(name):
        return name.replace("_", "__").replace(".", "_8").replace("/", "_2") + ".html"
    return {escape(os.path.basename(header)), escape(header)}


def expected_links(html_dir, sources):
    """For check_links.misdirected_links: per page, the links its source makes to pages of the
    site (Markdown pages, folder pages, library headers) and the page each must land on."""
    expected = {}
    for source in sources:
        links = []
        for text, target in source_links(source):
            kind, label = md_filter.link_destination(target, os.path.dirname(source))
            if kind in ("page", "folder"):
                want = label + ".html"
            elif kind == "header":
                # The name depends on Doxygen's choice; take the one that exists.
                want = next((name for name in sorted(header_pages(label))
                             if os.path.exists(os.path.join(html_dir, name))),
                            min(header_pages(label)))
            else:
                continue
            links.append((md_filter.link_words(text), want, target))
        expected[page_file(source)] = links
    return expected


def untranslated_math(html_dir):
    """Math the filter missed shows up as literal $$ or \\f$ in a page's text."""
    problems = []
    for name in sorted(os.listdir(html_dir)):
        if name.startswith("md_") and name.endswith(".html"):
            with open(os.path.join(html_dir, name), encoding="utf-8") as f:
                text = re.sub(r"<code>[\s\S]*?</code>|<pre>[\s\S]*?</pre>"
                              r"|<div class=\"fragment\">[\s\S]*?</div><!-- fragment -->", "", f.read())
            for marker in ("$$", "\\f$", "\\f[", "```math"):
                if marker in text:
                    problems.append(f"{name}: '{marker}' left in the text (math not typeset)")
    return problems


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
MATH_ERROR = re.compile(r'class="merror"|Math Processing Error|Undefined control sequence|Missing or unrecognized')


def rendered_dom(page):
    """The DOM of a page after headless Chromium ran its scripts (MathJax), or None without Chromium."""
    browser = next((b for b in map(shutil.which, CHROMIUM_NAMES) if b), None)
    if browser is None:
        return None
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                             "--dump-dom", "file://" + os.path.abspath(page)],
                            capture_output=True, text=True, timeout=90)
    return result.stdout


def math_render_problems(html_dir):
    """Formulas MathJax could not typeset (an unknown macro such as \\tfrac without the AMSmath
    extension): MathJax shows them as a red error box in the browser, which no static check of
    the HTML sees. Every page with math is rendered in headless Chromium and its DOM searched for
    MathJax's error markers; a page with a planted bad formula proves the check can fail. Returns
    (problems, pages checked); without Chromium, ([], None): the check is skipped, and says so."""
    pages = []
    for name in sorted(os.listdir(html_dir)):
        if name.endswith(".html"):
            with open(os.path.join(html_dir, name), encoding="utf-8") as f:
                if re.search(r"\\\(|\\\[", f.read()):
                    pages.append(name)
    planted = os.path.join(html_dir, "zz_planted_math_error.html")
    with open(os.path.join(html_dir, pages[0] if pages else "index.html"), encoding="utf-8") as f:
        text = f.read()
    with open(planted, "w", encoding="utf-8") as f:  # the same page with one formula that cannot typeset
        f.write(text.replace("</body>", "<p>\\(\\notamacro{x}\\)</p></body>", 1))
    try:
        if rendered_dom(planted) is None:
            return [], None
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            doms = dict(zip(pages + [planted], pool.map(rendered_dom, [os.path.join(html_dir, p) for p in pages]
                                                        + [planted])))
    finally:
        os.remove(planted)
    problems = []
    if not MATH_ERROR.search(re.sub(r"<style[\s\S]*?</style>", "", doms.pop(planted) or "")):
        problems.append("math render self-test: a planted unknown macro was not reported (is MathJax loading?)")
    for name, dom in doms.items():
        dom = re.sub(r"<style[\s\S]*?</style>", "", dom or "")
        if "MathJax" not in dom:
            problems.append(f"{name}: MathJax did not run (no typeset math in the rendered page)")
        for match in MATH_ERROR.finditer(dom):
            window = re.sub(r"^[^<]*>", "", dom[max(0, match.start() - 200):match.end() + 200])  # no half tag
            context = re.sub(r"<[^>]+>", " ", window)
            problems.append(f"{name}: MathJax could not typeset a formula: ...{context.strip()[:160]}...")
            break
    return problems, len(pages)


def main(argv):
    args = argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    if len(args) != 1:
        print("usage: build_site.py [--check] OUTPUT_DIR", file=sys.stderr)
        return 2
    missing = [what for what, ok in (("doxygen (Debian package doxygen)", shutil.which("doxygen")),
                                     ("MathJax (Debian package libjs-mathjax)",
                                      os.path.exists(os.path.join(MATHJAX_DIR, "MathJax.js"))))
               if not ok]
    if missing:
        print("build_site: not installed: " + ", ".join(missing) + "; ./course docs installs them",
              file=sys.stderr)
        return SKIPPED if check else 2
    output_dir = os.path.abspath(args[0])
    html_dir = os.path.join(output_dir, "html")
    warnings = run_doxygen(output_dir)
    copy_mathjax(html_dir)
    unlink_unqualified_code_names(html_dir)
    for warning in warnings:
        print(warning)
    print(f"build_site: {html_dir}/index.html ({len(warnings)} Doxygen warnings)")
    if not check:
        return 0
    _, broken = check_links.broken_links(html_dir)
    expected = expected_links(html_dir, markdown_sources())
    misdirected = check_links.misdirected_links(html_dir, expected)
    literal = check_links.literal_markdown(html_dir)
    self_test = check_links.self_test()  # each check above still fails on a planted defect
    problems = (warnings + [f"broken link: {b}" for b in broken]
                + [f"link to the wrong page: {m}" for m in misdirected]
                + [f"literal Markdown: {m}" for m in literal]
                + [f"check_links self-test: {f}" for f in self_test]
                + answer_block_problems(html_dir) + untranslated_math(html_dir))
    math_problems, math_pages = math_render_problems(html_dir)
    problems += math_problems
    print("build_site: math rendered in headless Chromium: "
          + (f"{math_pages} pages, {len(math_problems)} problems" if math_pages is not None
             else "skipped (no chromium; ./course test installs it)"))
    for problem in problems[len(warnings):]:
        print(problem)
    print(f"build_site: {len(problems)} problems ({len(warnings)} warnings, {len(broken)} broken "
          f"links, {len(misdirected)} of {sum(map(len, expected.values()))} source links on the "
          f"wrong page or dropped, {len(literal)} literal Markdown, {len(self_test)} self-test "
          f"failures)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
