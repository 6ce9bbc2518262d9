#!/usr/bin/env python3
"""doc_section.py DOC GENERATED NAME [--write]: the part of DOC between the lines
'<!-- NAME: begin -->' and '<!-- NAME: end -->' must be GENERATED's text (a generated table
kept in a hand-written document). Exit 1 and a unified diff when it is not; with --write,
replace that part of DOC instead."""
import difflib
import sys

doc, gen, name = sys.argv[1:4]
begin, end = "<!-- %s: begin -->\n" % name, "<!-- %s: end -->\n" % name
text = open(doc).read()
if begin not in text or end not in text:
    sys.exit("%s: no '%s' ... '%s' section" % (doc, begin.strip(), end.strip()))
head, rest = text.split(begin, 1)
have, tail = rest.split(end, 1)
want = open(gen).read()
if len(sys.argv) > 4 and sys.argv[4] == "--write":
    open(doc, "w").write(head + begin + want + end + tail)
    sys.exit(0)
if have != want:
    sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True), doc, gen))
    sys.exit(1)
