#!/usr/bin/env python3
"""Checks the symbols a student's library defines (CMake runs this after building it).

    check_symbols.py --namespace lab01 --lab-dir DIR libNAME.a

Every global symbol a student's object defines must belong to the lab's namespace
(lab01::...), be an operator new/delete (a student may bring their own allocator), or be
something the compiler generates (template instantiations and inline functions are weak
and never replace a real definition; nvcc's registration code). A student who defines, say,
course::compare(), a grader function, memcpy or main would replace trusted code in the
worker: the build fails and names the symbol and the object file.
"""
import re
import subprocess
import sys

ALLOWED = [
    re.compile(r"^operator (new|delete)(\[\])?\("),
]
# nvcc's host-side code for kernels: device stubs carry the kernel's mangled name.
NVCC_GENERATED = re.compile(r"^(__device_stub__|__cudaRegisterLinkedBinary|__fatbinwrap|__nv_|_GLOBAL__|__sti____cudaRegisterAll)")


def main():
    args = sys.argv[1:]
    namespace = args[args.index("--namespace") + 1]
    lab_dir = args[args.index("--lab-dir") + 1] if "--lab-dir" in args else ""
    archive = args[-1]
    out = subprocess.run(["nm", "--defined-only", "-A", archive], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"course-guard: cannot list the symbols of {archive}: {out.stderr.strip()}", file=sys.stderr)
        return 1
    candidates = []
    for line in out.stdout.splitlines():
        # archive.a:object.o:0000000000000000 T symbol
        parts = line.rsplit(" ", 2)
        if len(parts) != 3:
            continue
        where, kind, mangled = parts
        if kind in "WVwvUu" or kind.islower():
            continue  # weak (never overrides a strong definition), undefined, or local
        # nvcc's launch stub of a kernel (global even for a kernel in an anonymous namespace, e.g.
        # _Z67__device_stub__ZN5lab06...): allowed when the kernel it launches is in the lab's namespace.
        if "__device_stub__" in mangled:
            if f"{len(namespace)}{namespace}" in mangled.split("__device_stub__", 1)[1]:
                continue
        elif NVCC_GENERATED.match(mangled):
            continue
        candidates.append((where, mangled))
    names = subprocess.run(["c++filt"], input="\n".join(m for _, m in candidates), capture_output=True,
                           text=True).stdout.splitlines() if candidates else []
    bad = []
    for (where, mangled), demangled in zip(candidates, names):
        if demangled.startswith(namespace + "::") or any(p.match(demangled) for p in ALLOWED):
            continue
        obj = where.split(":")[-2] if where.count(":") >= 2 else where
        bad.append(f"{obj.replace('.o', '')}: {demangled}")
    if bad:
        for b in bad[:10]:
            print(f"course-guard: {b} is defined outside namespace {namespace}: a lab file may define only "
                  f"{namespace}::... (use namespace {namespace} or an anonymous namespace for helpers)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
