#!/usr/bin/env python3
"""The rooms of src/ and the rules between them (docs/design.md section 7), read from the
source: each room includes only the rooms it may (a project include names its room:
"room/file.h"), no header includes one that includes it back, no source file of src/ or
tests/ is over 900 lines, and src/ctrl/ stays under 6 500 lines. Inside src/dataplane/, file
rules keep the packet path readable by direction: the leaves (crypto jobs, the egress queue,
the AQM, the port interface and its kinds, the frame helpers, the route tables) reach no
direction file or worker through their includes, and only port.c (besides the port kinds
themselves) includes a port kind's header.

Usage: test_rooms.py <source root>. Prints one line per check (ok / not ok) and exits 1 if
any failed. It then proves that the file rules can fail: on a copy of src/ with a leaf
including worker.h, and with a direction file including a port kind's header, they must
report exactly that."""
import os
import re
import shutil
import sys
import tempfile

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

# src/dataplane: files that name no direction nor the worker (not even through their includes)
DP_LEAVES = ["crypt.c", "queue.c", "aqm.c", "port.c", "packet.c", "route.c", "lanfib.c",
             "udpport.c", "afpacket.c"]
DP_UPPER = {"dataplane/worker.h", "dataplane/encap.h", "dataplane/decap.h"}
# the port kinds' headers, and the files of src/dataplane that may include them
DP_PORT_HEADERS = {"dataplane/udpport.h", "dataplane/afpacket.h", "dataplane/sockport.h"}
DP_PORT_FILES = {"dataplane/port.c", "dataplane/udpport.c", "dataplane/afpacket.c"}

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



def reach(includes, start):
    """The project headers start includes, directly or through other headers."""
    seen, todo = set(), list(includes.get(start, ()))
    while todo:
        h = todo.pop()
        if h not in seen:
            seen.add(h)
            todo.extend(includes.get(h, ()))
    return seen


def dataplane_rules(includes):
    """(leaf problems, port header problems) of the file rules of src/dataplane."""
    up, ports = [], []
    for leaf in DP_LEAVES:
        rel = "dataplane/" + leaf
        if rel not in includes:
            up.append("%s is missing" % rel)
            continue
        bad = sorted(reach(includes, rel) & DP_UPPER)
        if bad:
            up.append("%s reaches %s" % (rel, ", ".join(bad)))
    for rel in sorted(includes):
        if rel.startswith("dataplane/") and rel.endswith(".c") and rel not in DP_PORT_FILES:
            bad = sorted(includes[rel] & DP_PORT_HEADERS)
            if bad:
                ports.append("%s includes %s" % (rel, ", ".join(bad)))
    return up, ports


def read_includes(src_dir):
    out = {}
    for path in sources(src_dir):
        out[os.path.relpath(path, src_dir)] = {"%s/%s" % m for m in INCLUDE.findall(open(path, encoding="utf-8").read())}
    return out


leaf_bad, port_bad = dataplane_rules(includes)
check(not leaf_bad, "src/dataplane leaves (%s) reach no worker.h, encap.h, decap.h%s" % (
    " ".join(DP_LEAVES), "" if not leaf_bad else ": " + "; ".join(leaf_bad)))
check(not port_bad, "in src/dataplane only port.c and the port kinds include %s%s" % (
    ", ".join(sorted(DP_PORT_HEADERS)), "" if not port_bad else ": " + "; ".join(port_bad)))


def self_check(src_dir, target, line):
    """The file rules on a copy of src/ where target (dataplane/<file>) has one more include."""
    tmp = tempfile.mkdtemp(prefix="tl_rooms_")
    try:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src_dir, copy, ignore=shutil.ignore_patterns("*.o", "*.a"))
        path = os.path.join(copy, target)
        if not os.path.exists(path):
            return ["%s is missing" % target], ["%s is missing" % target]
        text = open(path, encoding="utf-8").read()
        open(path, "w", encoding="utf-8").write(line + "\n" + text)
        return dataplane_rules(read_includes(copy))
    finally:
        shutil.rmtree(tmp)


up, _ = self_check(src, "dataplane/crypt.c", '#include "dataplane/worker.h"')
check(any(p.startswith("dataplane/crypt.c reaches dataplane/worker.h") for p in up),
      "self-check: the leaf rule fails on crypt.c including worker.h (%s)" % ("; ".join(up) or "it passed"))
_, ports = self_check(src, "dataplane/encap.c", '#include "dataplane/udpport.h"')
check("dataplane/encap.c includes dataplane/udpport.h" in ports,
      "self-check: the port rule fails on encap.c including udpport.h (%s)" % ("; ".join(ports) or "it passed"))

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
sys.exit(1 if failed else 0)
