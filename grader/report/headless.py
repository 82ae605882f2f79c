"""What the report and progress-chart tests share: static checks of a page for anything it could
load or run, headless Chromium (the DOM it renders, a screenshot), and a PNG decoder (stdlib zlib)
that tells a blank screenshot from a drawn one. Python 3 standard library only."""
import html.parser
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib

SKIP = 77  # CTest's SKIP_RETURN_CODE for these tests


class Failure(AssertionError):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


# --- static checks --------------------------------------------------------------------------

# Anything a page could fetch: a URL with a scheme (http:, file:, data:, javascript:, ...) or a
# protocol-relative one (//host) in an attribute that loads, or CSS url()/@import anywhere.
_LOADING_ATTRS = ("src", "href", "xlink:href", "action", "formaction", "srcset", "poster", "data", "background")
_SCHEME = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.I)
_CSS_URL = re.compile(r"url\s*\(|@import", re.I)
_ANY_URL = re.compile(r"(?:https?|file|ftp|wss?)://", re.I)


class Structure(html.parser.HTMLParser):
    """Elements and attributes of a page, and its text (what a reader sees)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []          # (tag, {attr: value})
        self.text = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("style", "script"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("style", "script") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)

    def all_text(self):
        return "".join(self.text)


def parse(markup):
    s = Structure()
    s.feed(markup)
    s.close()
    return s


def check_inert(markup, what, allow_xmlns=False):
    """No script, no event handler, nothing loaded from anywhere: the page shows, never runs or
    fetches. Returns the parsed structure for further checks."""
    body = markup
    if allow_xmlns:  # a standalone SVG file must name its namespace; that URL is never fetched
        body = body.replace('xmlns="http://www.w3.org/2000/svg"', "")
    url = _ANY_URL.search(body)
    check(not url, f"{what}: contains a URL ({url.group(0) if url else ''}...)")
    s = parse(markup)
    for tag, attrs in s.tags:
        check(tag not in ("script", "iframe", "object", "embed", "img", "link", "foreignobject", "image", "use", "base"),
              f"{what}: has a <{tag}> element")
        for name, value in attrs.items():
            check(not name.lower().startswith("on"), f"{what}: <{tag}> has an event handler attribute {name}")
            check(not (name.lower() in _LOADING_ATTRS and value and _SCHEME.match(value)),
                  f"{what}: <{tag} {name}={value!r}> would load something")
            check(not (name.lower() == "style" and value and _CSS_URL.search(value)), f"{what}: <{tag}> style loads something")
    styles = re.findall(r"<style[^>]*>(.*?)</style>", markup, re.S | re.I)
    check(not any(_CSS_URL.search(css) for css in styles), f"{what}: CSS url() or @import in a <style>")
    return s


# --- headless Chromium ----------------------------------------------------------------------


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run_chromium(chromium, args, timeout=90):
    # A private profile per call (no state from the user's browser, none left behind); as root
    # Chromium refuses to start without --no-sandbox. No network: every host name resolves to
    # nothing, so even a page that tried to load something could not.
    with tempfile.TemporaryDirectory(prefix="course-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--no-default-browser-check", "--disable-extensions",
               "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}"] + args
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=dict(os.environ, HOME=profile))
        except subprocess.TimeoutExpired:
            raise Failure(f"chromium did not finish in {timeout} s: {' '.join(cmd)}")


def dump_dom(chromium, path):
    """The DOM after Chromium loaded and laid out the file (scripts, had there been any, ran)."""
    r = _run_chromium(chromium, ["--dump-dom", "file://" + os.path.abspath(path)])
    check(r.returncode == 0 and "<" in r.stdout,
          f"chromium --dump-dom {path} failed (exit {r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def screenshot(chromium, path, png, size="1200,2000"):
    if os.path.exists(png):
        os.remove(png)
    r = _run_chromium(chromium, [f"--screenshot={png}", f"--window-size={size}", "--hide-scrollbars",
                                 "file://" + os.path.abspath(path)])
    check(os.path.isfile(png) and os.path.getsize(png) > 0,
          f"chromium --screenshot wrote no {png} (exit {r.returncode}): {r.stderr[-2000:]}")
    return png


# --- PNG ------------------------------------------------------------------------------------


def png_distinct_pixels(path, enough=64):
    """How many distinct pixel values the PNG has, counting up to `enough` (decoding stops there:
    a drawn page reaches it in the first rows, a blank one never does). 8-bit RGB/RGBA/grey only,
    which is what Chromium writes."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG")
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            check(depth == 8 and interlace == 0 and colour in (0, 2, 4, 6),
                  f"{path}: PNG kind not handled (depth {depth}, colour {colour}, interlace {interlace})")
            bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    seen = set()
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        # Undo the row's filter (PNG spec, section 9): each byte was stored as a difference to
        # its left (a), upper (b) or upper-left (c) neighbour.
        if kind == 1:
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 255
        elif kind == 2:
            for i in range(stride):
                row[i] = (row[i] + prev[i]) & 255
        elif kind == 3:
            for i in range(stride):
                row[i] = (row[i] + ((row[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            seen.add(bytes(row[x:x + bpp]))
        if len(seen) >= enough:
            break
        prev = row
    return len(seen)
