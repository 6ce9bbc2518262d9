#!/usr/bin/env python3
"""The manual pages built from docs/ (docs/man/meson.build): each renders without a warning
(man --warnings, as lintian runs it); the options each program prints with --help are
exactly the options its page documents (tunlessctl's page also covers watch and import), so
a new, renamed or removed option fails here until the page follows; tunless.yaml(5) carries
every section and every key of docs/config.md, tunlessctl(8) every operation of
docs/control-api.md. Prints "ok ..."/"FAIL ...", then "N passed, N failed".

Usage: test_man.py TUNLESSD TUNLESSCTL MAN_BUILD_DIR DOCS_DIR
"""
import os
import re
import subprocess
import sys

tunlessd, tunlessctl, mandir, docs = sys.argv[1:5]
passed = failed = 0


def check(desc, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok  ", desc)
    else:
        failed += 1
        print("FAIL", desc, detail)


def render(page, width=80):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANROFFSEQ="", MANWIDTH=str(width))
    p = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", page],
                       capture_output=True, env=env)
    text = subprocess.run(["man", "-l", page], capture_output=True, text=True,
                          env=dict(env, MAN_KEEP_FORMATTING="", MANPAGER="cat", PAGER="cat")).stdout
    return p.returncode, p.stderr.decode(), text


OPT = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def help_options(prog):
    out = subprocess.run([prog, "--help"], capture_output=True, text=True).stdout
    return set(OPT.findall(out)), out


def documented_options(text):
    """Options in the terms of the page's definition lists: lines at the body's indent
    (7 columns) that start with a dash, e.g. "       -c, --config FILE"."""
    opts = set()
    for line in text.splitlines():
        if re.match(r"^ {7}-", line):
            opts.update(OPT.findall(line))
    return opts


pages = {}
for name in ("tunlessd.8", "tunlessctl.8", "tunless.yaml.5"):
    path = os.path.join(mandir, name)
    if not os.path.isfile(path):
        check(name + " built", False, "(missing: " + path + ")")
        continue
    rc, warnings, text = render(path)
    check(name + " renders without warnings (man --warnings, 80 columns)", rc == 0 and not warnings.strip(),
          warnings.strip()[:800])
    _, _, wide = render(path, 250)
    pages[name] = wide
    check(name + " has NAME, SYNOPSIS, DESCRIPTION and SEE ALSO",
          all(re.search(r"^" + s + r"$", text, re.M) for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO")))

for prog, page in ((tunlessd, "tunlessd.8"), (tunlessctl, "tunlessctl.8")):
    if page not in pages:
        continue
    want, out = help_options(prog)
    have = documented_options(pages[page])
    check("%s: --help and %s document the same options (%s)" % (os.path.basename(prog), page, " ".join(sorted(want))),
          want == have and want, "only in --help: %s; only in the page: %s" % (sorted(want - have), sorted(have - want)))

if "tunless.yaml.5" in pages:
    text = pages["tunless.yaml.5"]
    src = open(os.path.join(docs, "config.md")).read()
    heads = re.findall(r"^#+ (.+)$", src, re.M)
    missing = [h for h in heads if not re.search(r"^\s*" + re.escape(h.replace("`", "")) + r"\s*$", text, re.M | re.I)]
    check("tunless.yaml.5 has every heading of docs/config.md (%d)" % len(heads), not missing, missing)
    keys = set(re.findall(r"^\| `([a-z_]+)` \|", src, re.M))
    missing = sorted(k for k in keys if not re.search(r"^ {7}" + re.escape(k) + r"\b", text, re.M))
    check("tunless.yaml.5 documents every key of docs/config.md's tables (%d)" % len(keys), keys and not missing, missing)

if "tunlessctl.8" in pages:
    text = pages["tunlessctl.8"]
    ops = re.findall(r"^### `(\w+)`$", open(os.path.join(docs, "control-api.md")).read(), re.M)
    missing = [o for o in ops if not re.search(r"^ {3}" + o + r"$", text, re.M)]
    check("tunlessctl.8 has every operation of docs/control-api.md (%s)" % " ".join(ops), ops and not missing, missing)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
