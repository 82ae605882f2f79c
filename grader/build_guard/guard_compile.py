#!/usr/bin/env python3
"""The guarded compiler: CMake runs every compile (and link) of student code through this.

    guard_compile.py --allow DIR [--allow DIR...] --sources LABDIR -- <compiler command...>
    guard_compile.py --link-only -- <linker command...>

* Limits: the command gets a wall-clock limit (COURSE_BUILD_TIMEOUT_S, default 300 s) and an
  address-space limit (COURSE_BUILD_MEMORY_MB, default 8192; nvcc's front ends need several GiB),
  and is killed with everything it started when it runs over: a file that makes the compiler
  run forever fails its lab instead of stalling the grader.
* Sources: the file being compiled must be a regular file inside the lab folder, not a
  symbolic link.
* Includes: after a successful compile, every file in the compiler's dependency output must lie
  in an allowed folder (the lab folder, common/include) or be a system header (under /usr or
  /opt, the toolchain's folders); anything else -- a golden reference, a solution, a test --
  fails the build with the offending #include line.
Messages start with "course-guard:" so the grader can show them.
"""
import os
import re
import resource
import shlex
import signal
import subprocess
import sys

SYSTEM_PREFIXES = ("/usr/", "/opt/", "/lib/", "/lib64/")


def fail(message):
    print(f"course-guard: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args(argv):
    allow, sources, link_only = [], None, False
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--allow":
            allow.append(os.path.realpath(argv[i + 1]))
            i += 2
        elif argv[i] == "--sources":
            sources = os.path.realpath(argv[i + 1])
            i += 2
        elif argv[i] == "--link-only":
            link_only = True
            i += 1
        else:
            fail(f"unknown option {argv[i]}")
    return allow, sources, link_only, argv[i + 1:]


def run_limited(command):
    timeout = float(os.environ.get("COURSE_BUILD_TIMEOUT_S", "300"))
    memory = int(os.environ.get("COURSE_BUILD_MEMORY_MB", "8192")) << 20

    def limits():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    proc = subprocess.Popen(command, preexec_fn=limits)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        fail(f"the compiler did not finish within {timeout:.0f} s and was stopped: "
             f"{os.path.basename(command[0])} ... (a file that makes the compiler run forever?)")


def option_value(command, flag):
    for i, arg in enumerate(command):
        if arg == flag and i + 1 < len(command):
            return command[i + 1]
        if arg.startswith(flag) and len(arg) > len(flag) and flag in ("-MF",):
            return arg[len(flag):]
    return None


def source_of(command):
    for i, arg in enumerate(command):
        if arg == "-c" and i + 1 < len(command):
            return command[i + 1]
    for arg in reversed(command):
        if arg.endswith((".cpp", ".cc", ".cxx", ".cu")):
            return arg
    return None


def check_no_links(lab_dir):
    """A submission is regular files only: a symbolic link (to a solution, a reference, another
    student's work) is refused, the lab folder itself included."""
    if os.path.islink(lab_dir.rstrip("/")):
        fail(f"{lab_dir} is a symbolic link: submit the folder itself")
    for root, dirs, files in os.walk(lab_dir):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                fail(f"{path} is a symbolic link: submit the file itself")


def read_depfile(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read().replace("\\\n", " ")
    deps = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        _, _, rest = line.partition(": ")
        deps += [p.replace("\\ ", " ") for p in re.split(r"(?<!\\)\s+", rest.strip()) if p]
    return deps


def include_line(source_dir, dep):
    """The #include line in the student's files that most likely brought `dep` in."""
    base = os.path.basename(dep)
    for root, _, files in os.walk(source_dir):
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        if re.match(r"\s*#\s*include", line) and base in line:
                            return f"{os.path.relpath(path, source_dir)}:{number}: {line.strip()}"
            except OSError:
                continue
    return None


def main():
    allow, sources, link_only, command = parse_args(sys.argv[1:])
    if not command:
        fail("no command given")
    if link_only:
        sys.exit(run_limited(command))

    source = source_of(command)
    if sources is not None:
        check_no_links(sys.argv[sys.argv.index("--sources") + 1])
    if source is not None and sources is not None:
        if os.path.islink(source):
            fail(f"{source} is a symbolic link: submit the file itself")
        real = os.path.realpath(source)
        if not real.startswith(sources + os.sep):
            fail(f"{source} is not inside the lab folder {sources}")

    depfile = option_value(command, "-MF")
    own_depfile = depfile is None
    if own_depfile:
        output = option_value(command, "-o") or "guard"
        depfile = output + ".guard.d"
        command = command + ["-MD", "-MF", depfile]
    code = run_limited(command)
    if code != 0:
        sys.exit(code)
    try:
        deps = read_depfile(depfile)
    except OSError:
        fail(f"the compiler wrote no dependency list ({depfile}); cannot check the includes")
    for dep in deps:
        real = os.path.realpath(dep)
        if real == os.path.realpath(source or ""):
            continue
        if any(real == a or real.startswith(a + os.sep) for a in allow):
            continue
        if real.startswith(SYSTEM_PREFIXES) and not any(real.startswith(p) for p in forbidden_roots()):
            continue
        where = include_line(sources, dep) if sources else None
        fail(f"{where or source}: including {dep} is not allowed: a lab file may include only its own folder, "
             f"common/include (course/..., labs/...) and system headers")
    if own_depfile:
        os.unlink(depfile)


def forbidden_roots():
    """The course's own tree may itself live under /usr or /opt: nothing in it outside the
    allowed folders is a system header."""
    root = os.environ.get("COURSE_SOURCE_ROOT")
    here = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    return [p + os.sep for p in {here, os.path.realpath(root) if root else here}]


if __name__ == "__main__":
    main()
