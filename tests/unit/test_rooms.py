#!/usr/bin/env python3
"""The rooms of src/ and the rules between them (docs/design.md section 7), read from the
source: each room includes only the rooms it may (a project include names its room:
"room/file.h"), no header includes one that includes it back, no source file of src/ or
tests/ is over 900 lines, src/ctrl/ stays under 6 500 lines, and no two rooms hold a source
file of one name (a reader who greps for lanfib.c finds one file).

Usage: test_rooms.py <source root>. Prints one line per check (ok / not ok) and exits 1 if
any failed."""
import os
import re
import sys

# room -> the rooms (or single headers) it may include, besides itself
MAY_INCLUDE = {
    "crypto": set(),
    "common": {"crypto"},
    "config": {"common", "crypto", "dataplane/qparams.h"},
    "kernel": {"common"},
    "api": {"common", "config", "crypto", "dataplane/qparams.h"},
    "dataplane": {"crypto"},
    "ctrl": {"crypto", "common", "config", "api", "kernel", "dataplane"},
    "daemon": {"crypto", "common", "config", "api", "kernel", "dataplane", "ctrl"},
    "cli": {"api", "common"},
}
MAX_FILE_LINES = 900
MAX_CTRL_LINES = 6500
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/([a-z_0-9]+\.h)"', re.M)

root = sys.argv[1] if len(sys.argv) > 1 else "."
src = os.path.join(root, "src")
failed = 0


def check(cond, what):
    global failed
    print(("ok " if cond else "not ok ") + what)
    failed += 0 if cond else 1


def sources(top):
    for d, _, files in os.walk(top):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


rooms = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
check(set(rooms) == set(MAY_INCLUDE), "the rooms of src/ are the ones the rules name: %s" % " ".join(rooms))

includes = {}   # "room/file.h" or "room/file.c" -> set of "room/file.h"
for room in rooms:
    bad = []
    for path in sources(os.path.join(src, room)):
        rel = os.path.relpath(path, src)
        text = open(path, encoding="utf-8").read()
        incs = {"%s/%s" % m for m in INCLUDE.findall(text)}
        includes[rel] = incs
        for inc in sorted(incs):
            other = inc.split("/")[0]
            if other != room and other not in MAY_INCLUDE.get(room, set()) and inc not in MAY_INCLUDE.get(room, set()):
                bad.append("%s includes %s" % (rel, inc))
    check(not bad, "src/%s includes only %s%s" % (
        room, ", ".join(sorted(MAY_INCLUDE.get(room, set()))) or "itself",
        "" if not bad else ": " + "; ".join(bad)))

# no cycle among headers
headers = {k: v for k, v in includes.items() if k.endswith(".h")}
state, cycle = {}, []


def visit(h, stack):
    state[h] = 1
    for n in sorted(headers.get(h, ())):
        if n not in headers:
            continue
        if state.get(n) == 1:
            cycle.append(" -> ".join(stack[stack.index(n):] + [n]) if n in stack else n)
        elif not state.get(n):
            visit(n, stack + [n])
    state[h] = 2


for h in sorted(headers):
    if not state.get(h):
        visit(h, [h])
check(not cycle, "no header includes one that includes it back%s" % ("" if not cycle else ": " + "; ".join(cycle)))

long_files = []
for top in ("src", "tests", "bench"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".c", ".h", ".py", ".sh")):
                p = os.path.join(d, f)
                n = sum(1 for _ in open(p, encoding="utf-8", errors="replace"))
                if n > MAX_FILE_LINES:
                    long_files.append("%s (%d)" % (os.path.relpath(p, root), n))
check(not long_files, "no source file of src/, tests/, bench/ over %d lines%s" % (
    MAX_FILE_LINES, "" if not long_files else ": " + ", ".join(sorted(long_files))))

ctrl = sum(sum(1 for _ in open(p, encoding="utf-8")) for p in sources(os.path.join(src, "ctrl")))
check(ctrl < MAX_CTRL_LINES, "src/ctrl/ has %d lines (under %d)" % (ctrl, MAX_CTRL_LINES))

# one name, one file: no two folders of src/ hold a .c/.h of one name (lanfib.c and lanfib.h
# count as one name, "lanfib"). The self-check runs the rule on a copy of src/ given a second
# file of a name that exists, so the rule is seen to fail.
def same_names(top):
    where = {}
    for path in sources(top):
        stem = os.path.splitext(os.path.basename(path))[0]
        where.setdefault(stem, set()).add(os.path.relpath(os.path.dirname(path), top))
    return sorted("%s (%s)" % (n, ", ".join(sorted(d))) for n, d in where.items() if len(d) > 1)


dups = same_names(src)
check(not dups, "no two folders of src/ hold a source file of one name%s" % ("" if not dups else ": " + "; ".join(dups)))


def self_check_same_names():
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy)
        first = next(sources(os.path.join(copy, rooms[0])))
        name = os.path.basename(first)
        shutil.copy(first, os.path.join(copy, rooms[1], name))
        return name, same_names(copy)


name, seen = self_check_same_names()
stem = os.path.splitext(name)[0]
check(any(d.startswith(stem + " (") for d in seen), "self-check: the one-name rule fails on a copy of src/ with src/%s/%s added: %s" % (
    rooms[1], name, "; ".join(seen) or "nothing found"))
sys.exit(1 if failed else 0)
