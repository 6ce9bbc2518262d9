#!/usr/bin/env python3
"""The rooms of src/ and the rules between them (docs/design.md section 7), read from the
source: each room includes only the rooms it may (a project include names its room:
"room/file.h"), no header includes one that includes it back, no source file of src/ or
tests/ is over 900 lines, src/ctrl/ stays under 6 500 lines, and no two rooms hold a source
file of one name (a reader who greps for lanfib.c finds one file). Inside src/dataplane/, file
rules keep the packet path readable by direction: the leaves (crypto jobs, the egress queue,
the AQM, the port interface and its kinds, the frame helpers, the route tables) reach no
direction file or worker through their includes, and only port.c (besides the port kinds
themselves) includes a port kind's header. A port kind's names (its type, handle, functions:
the tl_<prefix>_ of its header) appear neither in dataplane/dp.h, whose tl_port_info holds a
port's kind only as the port interface's table and an opaque pointer, nor in src/ctrl/, which
opens, moves and closes ports through port.h: a new kind touches its own files and port.c.
The unit tests sit beside
the room they test: tests/unit/<room>/ names a room of src/ (or deploy/, harness/), and a
test file there is named after a file of that room (or the room), or is listed in
TEST_EXCEPTIONS with the reason, and is declared in that folder's meson.build.

Usage: test_rooms.py <source root>. Prints one line per check (ok / not ok) and exits 1 if
any failed. It then proves that the file rules can fail: on a copy of src/ with a leaf
including worker.h, and with a direction file including a port kind's header, they must
report exactly that, and a port kind's handle put back into dp.h or ctrl/ports.c must fail
the port-name rule."""
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
DP_LEAVES = ["crypt.c", "queue.c", "aqm.c", "port.c", "packet.c", "route.c", "lanfib.c", "balance.c",
             "udpport.c", "udpport_ops.c", "afpacket.c", "afpacket_ops.c"]
DP_UPPER = {"dataplane/worker.h", "dataplane/encap.h", "dataplane/decap.h"}
# the port kinds' headers, and the files of src/dataplane that may include them
DP_PORT_HEADERS = {"dataplane/udpport.h", "dataplane/afpacket.h", "dataplane/sockport.h"}
DP_PORT_FILES = {"dataplane/port.c", "dataplane/udpport.c", "dataplane/udpport_ops.c", "dataplane/afpacket.c",
                 "dataplane/afpacket_ops.c"}
# where no port kind is named: the port's constants (dp.h) and the control plane
PORT_KIND_FREE = ("dataplane/dp.h", "ctrl/")
DECL_PREFIX = re.compile(r'^[a-z].*?\b(tl_[a-z0-9]+)_[a-z0-9_]+\(', re.M)

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


def port_kind_names(src_dir):
    """Where dp.h or a file of src/ctrl names a port kind: its header, or a name with the
    prefix of the functions its header declares (tl_udpport_*, struct tl_afp, ...)."""
    prefixes = set()
    for h in sorted(DP_PORT_HEADERS):
        path = os.path.join(src_dir, h)
        if os.path.exists(path):
            prefixes |= set(DECL_PREFIX.findall(open(path, encoding="utf-8").read()))
    names = re.compile(r'\b(?:%s)\w*|\b(?:%s)\b' % (
        "|".join(re.escape(p + "_") for p in sorted(prefixes)) or "(?!)",
        "|".join(re.escape(h) for h in sorted(DP_PORT_HEADERS) + sorted(prefixes))))
    out = []
    for path in sources(src_dir):
        rel = os.path.relpath(path, src_dir)
        if rel.startswith(PORT_KIND_FREE):
            found = sorted(set(names.findall(open(path, encoding="utf-8").read())))
            if found:
                out.append("%s names %s" % (rel, ", ".join(found)))
    return out, sorted(prefixes)


leaf_bad, port_bad = dataplane_rules(includes)
check(not leaf_bad, "src/dataplane leaves (%s) reach no worker.h, encap.h, decap.h%s" % (
    " ".join(DP_LEAVES), "" if not leaf_bad else ": " + "; ".join(leaf_bad)))
check(not port_bad, "in src/dataplane only port.c and the port kinds include %s%s" % (
    ", ".join(sorted(DP_PORT_HEADERS)), "" if not port_bad else ": " + "; ".join(port_bad)))


kind_bad, kind_prefixes = port_kind_names(src)
check(len(kind_prefixes) >= 2 and not kind_bad, "no port kind (%s) is named in %s%s" % (
    ", ".join(p + "_*" for p in kind_prefixes), " or ".join(PORT_KIND_FREE),
    "" if not kind_bad else ": " + "; ".join(kind_bad)))


def self_check(src_dir, target, line, names=False):
    """The file rules (names: the port-name rule) on a copy of src/ where target (room/file)
    has one more line first."""
    tmp = tempfile.mkdtemp(prefix="tl_rooms_")
    try:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src_dir, copy, ignore=shutil.ignore_patterns("*.o", "*.a"))
        path = os.path.join(copy, target)
        if not os.path.exists(path):
            return ["%s is missing" % target], ["%s is missing" % target]
        text = open(path, encoding="utf-8").read()
        open(path, "w", encoding="utf-8").write(line + "\n" + text)
        return port_kind_names(copy)[0] if names else dataplane_rules(read_includes(copy))
    finally:
        shutil.rmtree(tmp)


up, _ = self_check(src, "dataplane/crypt.c", '#include "dataplane/worker.h"')
check(any(p.startswith("dataplane/crypt.c reaches dataplane/worker.h") for p in up),
      "self-check: the leaf rule fails on crypt.c including worker.h (%s)" % ("; ".join(up) or "it passed"))
_, ports = self_check(src, "dataplane/encap.c", '#include "dataplane/udpport.h"')
check("dataplane/encap.c includes dataplane/udpport.h" in ports,
      "self-check: the port rule fails on encap.c including udpport.h (%s)" % ("; ".join(ports) or "it passed"))
named = self_check(src, "dataplane/dp.h", "struct tl_udpport;", names=True)
check("dataplane/dp.h names tl_udpport" in named,
      "self-check: the port-name rule fails on dp.h naming struct tl_udpport (%s)" % ("; ".join(named) or "it passed"))
named = self_check(src, "ctrl/ports.c", "static void f(struct tl_port_info *p) { tl_afp_close(p->priv); }", names=True)
check("ctrl/ports.c names tl_afp_close" in named,
      "self-check: the port-name rule fails on ctrl/ports.c calling tl_afp_close (%s)" % ("; ".join(named) or "it passed"))

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
# ---- tests/unit/ beside the rooms ----------------------------------------------------------
# Folders of tests/unit/ that are not rooms of src/: what the build installs (deploy) and what
# the tests share (harness: no tests of its own).
TEST_EXTRAS = {"deploy", "harness"}
# Test files not named after a file of their room (or the room): why.
TEST_EXCEPTIONS = {
    "dataplane/test_pipeline.c": "the worker pipeline end to end (worker.c, encap.c, decap.c, queue.c) on harness/pipeline.h",
    "dataplane/test_pipeline_checks.c": "outer-frame checks and edge cases of the same pipeline (decap.c, encap.c)",
    "dataplane/test_mtu.c": "encap.c's inner packets above the tunnel MTU (ICMP errors, fragments) on the pipeline",
    "dataplane/test_slowpath.c": "what kernels hand the pipeline: partial checksums (encap.c), reassembled datagrams (decap.c)",
    "dataplane/test_lan_packet.c": "the worker's egress (decap.c, queue.c, port.c) on real packet and udp ports",
    "ctrl/test_readmodel.c": "the read model (stats.c) as readers on other threads see it while the write model changes",
    "daemon/test_watchdog.c": "notify.c's watchdog during a long request (tl_device.progress)",
    "deploy/test_hardening.sh": "both programs built hardened (meson.build's hardening options)",
    "deploy/test_install.sh": "what `meson install` puts where",
    "deploy/test_man.py": "the manual pages of docs/man/ against the programs' --help",
}
TEST_FILE = re.compile(r"^test_([a-z0-9_]+)\.(c|py|sh)$")


def tests_layout(unit, src_dir):
    """What breaks the layout of the unit tests (unit = tests/unit), as a list of lines."""
    bad = []
    rooms_of_src = {d for d in os.listdir(src_dir) if os.path.isdir(os.path.join(src_dir, d))}
    for name in sorted(os.listdir(unit)):
        path = os.path.join(unit, name)
        if os.path.isdir(path):
            if name not in rooms_of_src and name not in TEST_EXTRAS:
                bad.append("tests/unit/%s/ is not a room of src/ (nor %s)" % (name, ", ".join(sorted(TEST_EXTRAS))))
        elif name not in ("meson.build", "test_rooms.py"):
            bad.append("tests/unit/%s: only meson.build and test_rooms.py sit at the top, the rest in a folder" % name)
    for room in sorted(d for d in os.listdir(unit) if os.path.isdir(os.path.join(unit, d)) and d != "harness"):
        folder = os.path.join(unit, room)
        stems = set()
        if os.path.isdir(os.path.join(src_dir, room)):
            stems = {os.path.splitext(f)[0] for f in os.listdir(os.path.join(src_dir, room)) if f.endswith((".c", ".h"))}
        meson = os.path.join(folder, "meson.build")
        declared = open(meson, encoding="utf-8").read() if os.path.exists(meson) else ""
        if not declared:
            bad.append("tests/unit/%s/ has no meson.build declaring its tests" % room)
        for f in sorted(os.listdir(folder)):
            m = TEST_FILE.match(f)
            if not m:
                continue
            name, rel = m.group(1), "%s/%s" % (room, f)
            named = any(name == n or name.startswith(n + "_") for n in stems | {room})
            if not named and rel not in TEST_EXCEPTIONS:
                bad.append("tests/unit/%s is named after no file of src/%s/ and is not an exception" % (rel, room))
            if declared and not re.search(r"(?<![A-Za-z0-9_])(test_)?%s(?![A-Za-z0-9_])" % re.escape(name), declared):
                bad.append("tests/unit/%s is not declared in tests/unit/%s/meson.build" % (rel, room))
    for rel in sorted(TEST_EXCEPTIONS):
        if not os.path.exists(os.path.join(unit, rel)):
            bad.append("TEST_EXCEPTIONS names tests/unit/%s, which does not exist" % rel)
    return bad


unit_dir = os.path.join(root, "tests", "unit")
layout = tests_layout(unit_dir, src)
check(not layout, "tests/unit/: each folder a room of src/ (or %s), each test named after a file of its room "
      "(or an exception) and declared beside it%s" % (", ".join(sorted(TEST_EXTRAS)), "" if not layout else ": " + "; ".join(layout)))


def self_check_tests_layout():
    """A copy of tests/unit/ with a folder that is no room, a test named after nothing and
    declared nowhere, and a stray test at the top: each must be reported."""
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "unit")
        shutil.copytree(unit_dir, copy, ignore=shutil.ignore_patterns("configs", "gen"))
        os.mkdir(os.path.join(copy, "wire"))
        open(os.path.join(copy, "wire", "meson.build"), "w").close()
        os.makedirs(os.path.join(copy, rooms[0]), exist_ok=True)
        open(os.path.join(copy, rooms[0], "test_nosuchfile.c"), "w").close()
        open(os.path.join(copy, "test_stray.c"), "w").close()
        return tests_layout(copy, src)


seen = self_check_tests_layout()
want = ["tests/unit/wire/ is not a room", "tests/unit/%s/test_nosuchfile.c is named after no file" % rooms[0],
        "tests/unit/%s/test_nosuchfile.c is not declared" % rooms[0], "tests/unit/test_stray.c: only meson.build"]
missing = [w for w in want if not any(x.startswith(w) for x in seen)]
check(not missing, "self-check: the tests/unit/ layout rule fails on a copy with a folder that is no room, a test "
      "named after nothing, declared nowhere, and one at the top%s" % ("" if not missing else ": not reported: " + "; ".join(missing)))

sys.exit(1 if failed else 0)
