#!/usr/bin/env python3
"""The guarded compiler: CMake runs every compile (and link) of student code through this.

    guard_compile.py --allow DIR [--allow DIR...] --sources LABDIR [--sandbox COURSE_SANDBOX]
                     -- <compiler command...>
    guard_compile.py --link-only -- <linker command...>

* Limits: the command gets a wall-clock limit (COURSE_BUILD_TIMEOUT_S, default 300 s) and an
  address-space limit (COURSE_BUILD_MEMORY_MB, default 8192; nvcc's front ends need several GiB),
  and is killed with everything it started when it runs over: a file that makes the compiler
  run forever fails its lab instead of stalling the grader.
* Sources: the lab folder may hold only regular files and folders: a symbolic link, a hard link
  (a file with more than one name: it could be the solution's file under another name), a FIFO, a
  device or a socket is refused, naming the file.
* The fence (with --sandbox): the compiler never sees the course. The lab folder's files and
  common/include are copied into a fresh temporary folder, the command's paths are rewritten to
  the copies, and the compiler runs in course_sandbox (the workers' sandbox: system folders
  read-only, the staged copies read-only, one staged output folder writable, private /tmp, no
  network, an unprivileged user). Whatever a student's file makes the compiler or assembler read
  -- #include, asm(".incbin ..."), #embed -- can only be the student's own files or the system's.
  The object and dependency files are copied back and the messages speak of the student's paths.
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
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

SYSTEM_PREFIXES = ("/usr/", "/opt/", "/lib/", "/lib64/")


def fail(message):
    print(f"course-guard: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args(argv):
    allow, sources, link_only, sandbox = [], None, False, None
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--allow":
            allow.append(os.path.realpath(argv[i + 1]))
            i += 2
        elif argv[i] == "--sources":
            sources = os.path.realpath(argv[i + 1])
            i += 2
        elif argv[i] == "--sandbox":
            sandbox = argv[i + 1]
            i += 2
        elif argv[i] == "--link-only":
            link_only = True
            i += 1
        else:
            fail(f"unknown option {argv[i]}")
    return allow, sources, link_only, sandbox, argv[i + 1:]


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
    """A submission is regular files and folders only: a symbolic link or a hard link (to a
    solution, a reference, another student's work) is refused, and so is a FIFO, a device or a
    socket (the compiler would block on it or read a device), the lab folder itself included."""
    if os.path.islink(lab_dir.rstrip("/")):
        fail(f"{lab_dir} is a symbolic link: submit the folder itself")
    for root, dirs, files in os.walk(lab_dir):
        for name in dirs + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                fail(f"{path} is a symbolic link: submit the file itself")
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                fail(f"{path} is not a regular file (a FIFO, a device or a socket): submit plain files only")
            if info.st_nlink > 1:
                fail(f"{path} is a hard link (the same file has {info.st_nlink} names, e.g. a solution's file): "
                     f"submit a copy of your own file")


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


# Options whose value is a path to read (the include folders, forced includes): rewritten to the
# staged copies. Longest first, so that "-isystem" is not read as "-i" + "system".
READ_PATH_FLAGS = ("-idirafter", "-isystem", "-imacros", "-include", "-iquote", "-I")
STAGE_LIMIT = 64 << 20  # bytes of a lab folder the guard copies; more is not a lab


def expand_options_files(command):
    """nvcc reads its include folders from a response file in the build tree (--options-file),
    which the sandboxed compiler cannot see: its (trusted, CMake-written) contents go inline."""
    out, i = [], 0
    while i < len(command):
        arg = command[i]
        if arg in ("--options-file", "-optf") and i + 1 < len(command):
            with open(command[i + 1], encoding="utf-8") as f:
                out += shlex.split(f.read())
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def copy_tree(src, dst, strict):
    """Copies the regular files of `src` into `dst` (folders 0755, files 0644). strict (a lab
    folder): anything but a regular file with one name was refused before; checked again here,
    on the file actually opened."""
    total = 0
    for root, dirs, files in os.walk(src):
        target = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(target, mode=0o755, exist_ok=True)
        os.chmod(target, 0o755)
        for name in files:
            path = os.path.join(root, name)
            flags = os.O_RDONLY | (os.O_NOFOLLOW | os.O_NONBLOCK if strict else 0)
            fd = os.open(path, flags)
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if strict and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
                    fail(f"{path} is not a regular file with a single name: submit plain files only")
                total += info.st_size
                if total > STAGE_LIMIT:
                    fail(f"{src} holds more than {STAGE_LIMIT >> 20} MiB: a lab folder holds source files only")
                with open(os.path.join(target, name), "wb") as out:
                    shutil.copyfileobj(f, out)
            os.chmod(os.path.join(target, name), 0o644)


class Stage:
    """A fresh temporary folder holding copies of the folders the compile may read (in/) and the
    one folder it may write (out/); maps paths between the real and the staged places."""

    def __init__(self, lab_dir, other_dirs):
        self.root = tempfile.mkdtemp(prefix="course-guard-")
        os.chmod(self.root, 0o711)  # the sandbox's user may pass, not list
        self.inputs = os.path.join(self.root, "in")
        self.output = os.path.join(self.root, "out")
        os.mkdir(self.inputs, 0o755)
        os.mkdir(self.output, 0o755)
        self.pairs = []  # (real, staged)
        for n, real in enumerate([lab_dir] + other_dirs):
            staged = os.path.join(self.inputs, f"{n}-{os.path.basename(real)}")
            copy_tree(real, staged, strict=(n == 0))
            self.pairs.append((real, staged))
        self.outputs = []  # (staged, real)

    def staged(self, path):
        full = os.path.realpath(path)
        for real, staged in self.pairs:
            if full == real or full.startswith(real + os.sep):
                return staged + full[len(real):]
        return None

    def output_for(self, path):
        staged = os.path.join(self.output, f"{len(self.outputs)}-{os.path.basename(path)}")
        self.outputs.append((staged, path))
        return staged

    def unstage_text(self, text):
        for real, staged in self.pairs:
            text = text.replace(staged, real)
        for staged, real in self.outputs:
            text = text.replace(staged, real)
        return text.replace(self.root, "<staged>")

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


def rewrite(command, stage):
    """The command with every path it reads from the lab folder or common/include pointing at
    the staged copies, and every file it writes (-o, -MF) in the staged output folder."""
    out, i = [], 0
    while i < len(command):
        arg = command[i]
        if arg in ("-o", "-MF") and i + 1 < len(command):
            out += [arg, stage.output_for(command[i + 1])]
            i += 2
            continue
        if arg in ("-MT", "-MQ") and i + 1 < len(command):  # a name in the depfile, not a path
            out += [arg, command[i + 1]]
            i += 2
            continue
        if arg in READ_PATH_FLAGS and i + 1 < len(command):
            out += [arg, stage.staged(command[i + 1]) or command[i + 1]]
            i += 2
            continue
        flag = next((f for f in READ_PATH_FLAGS if arg.startswith(f) and len(arg) > len(f)), None)
        if flag is not None:
            value = arg[len(flag):]
            sep = "=" if value.startswith("=") else ""
            mapped = stage.staged(value[len(sep):])
            out.append(flag + sep + mapped if mapped else arg)
        elif not arg.startswith("-") and stage.staged(arg):
            out.append(stage.staged(arg))  # the source file
        else:
            out.append(arg)
        i += 1
    return out


def run_fenced(sandbox, command, stage):
    """Runs the compile in course_sandbox; returns its exit code after copying the outputs back
    and printing its messages with the student's paths."""
    timeout = int(float(os.environ.get("COURSE_BUILD_TIMEOUT_S", "300")))
    memory = int(os.environ.get("COURSE_BUILD_MEMORY_MB", "8192"))
    env = {"PATH": "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
           "LANG": os.environ.get("LANG", "C.UTF-8")}
    for keep in ("LC_ALL", "COURSE_SANDBOX", "COURSE_SANDBOX_UID", "COURSE_SANDBOX_HIDE", "COURSE_HIDDEN_DIR"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    full = [sandbox, "--memory-mb", str(memory), "--timeout-s", str(timeout), "--ro", stage.inputs,
            "--rw", stage.output, "--chdir", stage.output, "--", *command]
    try:
        done = subprocess.run(full, env=env, capture_output=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(full, 124, b"", b"")
    sys.stdout.write(stage.unstage_text(done.stdout.decode("utf-8", "replace")))
    sys.stderr.write(stage.unstage_text(done.stderr.decode("utf-8", "replace")))
    if done.returncode == 124:
        fail(f"the compiler did not finish within {timeout} s and was stopped: "
             f"{os.path.basename(command[0])} ... (a file that makes the compiler run forever?)")
    if done.returncode == 125:
        fail("the compiler's sandbox (course_sandbox) could not be set up; see the message above")
    for staged, real in stage.outputs:
        if not os.path.isfile(staged):
            continue
        if real.endswith(".d"):  # a dependency list: the student's paths, as make expects them
            with open(staged, encoding="utf-8", errors="replace") as f:
                text = stage.unstage_text(f.read())
            with open(real, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            shutil.copyfile(staged, real)
    return done.returncode


def check_include_lines(lab_dir, allow):
    """Before compiling: an #include that names a file outside the lab folder by an absolute path
    or by climbing out with "..", e.g. a golden reference or a solution, is refused with the line
    that does it. (Inside the fence such a file is not there anyway; this says why.)"""
    for root, _, files in os.walk(lab_dir):
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
                    if not m:
                        continue
                    target = m.group(1)
                    if target.startswith("/"):
                        real = os.path.realpath(target)
                        if any(real == a or real.startswith(a + os.sep) for a in allow):
                            continue
                        if real.startswith(SYSTEM_PREFIXES) and not any(real.startswith(p) for p in forbidden_roots()):
                            continue
                    elif ".." in target.replace("\\", "/").split("/"):
                        real = os.path.realpath(os.path.join(root, target))
                        if real.startswith(lab_dir + os.sep):
                            continue
                    else:
                        continue
                    fail(f"{os.path.relpath(path, lab_dir)}:{number}: {line.strip()}: including {target} is not "
                         f"allowed: a lab file may include only its own folder, common/include (course/..., "
                         f"labs/...) and system headers")


def main():
    allow, sources, link_only, sandbox, command = parse_args(sys.argv[1:])
    if not command:
        fail("no command given")
    if link_only:
        # The link step stays outside the sandbox: it links the trusted objects (endpoints,
        # harness, worker main) and the student's archive, whose objects were assembled inside
        # the fence (.incbin and the like act at assemble time, so what they could embed was
        # only the staged copies and system files). The linker itself reads only the files on
        # its command line, which CMake wrote; check_symbols.py has vetted the archive.
        sys.exit(run_limited(command))

    source = source_of(command)
    if sources is not None:
        check_no_links(sys.argv[sys.argv.index("--sources") + 1])
        check_include_lines(sources, allow)
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
    if sandbox is not None and sources is not None:
        stage = Stage(sources, [a for a in allow if a != sources])
        try:
            fenced = rewrite(expand_options_files(command), stage)
            if "nvcc" not in os.path.basename(fenced[0]):
                # __FILE__ (assert messages) and debug information name the student's files.
                fenced[1:1] = [f"-ffile-prefix-map={staged}={real}" for real, staged in stage.pairs]
            code = run_fenced(sandbox, fenced, stage)
        finally:
            stage.remove()
    else:
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
