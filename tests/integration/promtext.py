#!/usr/bin/env python3
"""Strict parser and checker of the Prometheus text exposition format 0.0.4 (stdlib only).

Usage:
  promtext.py check FILE [--drop-h src/dataplane/drop.h] [--require name,name,...]
      Parses FILE strictly; prints every violation as "line N: why" and exits 1 on any.
      --drop-h: the reason labels of tunless_drops_total must be exactly drop.h's list.
      --require: these metric families must be present.
  promtext.py get FILE NAME [label=value ...]
      Prints the sum of the samples of NAME whose labels match (exit 1 if none match).
  promtext.py grew OLD NEW NAME [label=value ...]
      Exit 0 if the matching sum in NEW is larger than in OLD; prints both.
  promtext.py monotone OLD NEW
      Every counter series and histogram bucket in OLD is <= its value in NEW (exit 1 if not).
  promtext.py fetch URL [OUT]
      HTTP GET with urllib; writes the body to OUT (or stdout); exit 1 unless status 200.

Rules checked (beyond the grammar): # HELP then # TYPE exactly once per family, before its
samples; a family's samples contiguous; sample names match their family (histograms:
_bucket/_sum/_count; counters end in _total); label names valid, no duplicates, no '__'
prefix; label values only use the escapes \\\\ \\" \\n; no duplicate series; counters >= 0 and
finite; histogram buckets strictly increasing in le, counts non-decreasing, +Inf present and
equal to _count, _sum present; the text ends with a newline.
"""
import math
import re
import sys
import urllib.error
import urllib.request

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class Sample:
    __slots__ = ("name", "labels", "value", "line")

    def __init__(self, name, labels, value, line):
        self.name, self.labels, self.value, self.line = name, labels, value, line


def parse_value(s):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s):
        raise ValueError("bad value %r" % s)
    return float(s)


def parse_labels(s, i, errs, ln):
    """s[i] == '{'. Returns (dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ValueError("bad label name at column %d" % (i + 1))
        name = m.group(0)
        if name.startswith("__"):
            errs.append("line %d: label %s: names starting with __ are reserved" % (ln, name))
        i = m.end()
        if s[i:i + 2] != '="':
            raise ValueError("label %s: expected =\"" % name)
        i += 2
        val = []
        while True:
            if i >= len(s):
                raise ValueError("label %s: unterminated value" % name)
            c = s[i]
            if c == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ValueError("label %s: bad escape \\%s" % (name, nxt))
                val.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                val.append(c)
                i += 1
        if name in labels:
            errs.append("line %d: duplicate label %s" % (ln, name))
        labels[name] = "".join(val)
        if i < len(s) and s[i] == ",":
            i += 1
        elif i < len(s) and s[i] == "}":
            continue
        else:
            raise ValueError("label %s: expected , or }" % name)


def parse_sample(line, errs, ln):
    m = NAME.match(line)
    if not m:
        raise ValueError("bad metric name")
    name, i, labels = m.group(0), m.end(), {}
    if i < len(line) and line[i] == "{":
        labels, i = parse_labels(line, i, errs, ln)
    rest = line[i:]
    if not rest.startswith(" "):
        raise ValueError("expected a space before the value")
    parts = rest.split(" ")[1:]
    if not 1 <= len(parts) <= 2 or "" in parts:
        raise ValueError("expected 'value [timestamp]'")
    value = parse_value(parts[0])
    if len(parts) == 2 and not re.fullmatch(r"-?\d+", parts[1]):
        raise ValueError("bad timestamp %r" % parts[1])
    return Sample(name, labels, value, ln)


def family_of(sample_name, families):
    if sample_name in families:
        return sample_name
    for suf in ("_bucket", "_sum", "_count"):
        if sample_name.endswith(suf) and families.get(sample_name[: -len(suf)], {}).get("type") in ("histogram", "summary"):
            return sample_name[: -len(suf)]
    return None


def parse(text):
    """Returns (families, samples, errors). families: name -> {help, type, samples: [Sample]}."""
    errs, families, samples = [], {}, []
    if text and not text.endswith("\n"):
        errs.append("the text does not end with a newline")
    current, closed = None, set()
    seen_series = set()
    for ln, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        if line == "":
            errs.append("line %d: empty line" % ln)
            continue
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (\S+) ?(.*)", line)
            if not m:
                if re.match(r"#\s*(HELP|TYPE)\b", line):
                    errs.append("line %d: malformed %s line" % (ln, line.split()[1] if len(line.split()) > 1 else "#"))
                continue    # other comments are allowed
            kind, name, rest = m.groups()
            if not NAME.fullmatch(name):
                errs.append("line %d: bad metric name %r" % (ln, name))
                continue
            fam = families.get(name)
            if kind == "HELP":
                if fam is not None:
                    errs.append("line %d: second HELP for %s" % (ln, name))
                    continue
                if name in closed:
                    errs.append("line %d: %s appears again after other families" % (ln, name))
                if current and current != name:
                    closed.add(current)
                families[name] = {"help": rest, "type": None, "samples": [], "line": ln}
                if re.search(r"\\[^\\n]", rest):
                    errs.append("line %d: HELP of %s: bad escape" % (ln, name))
                current = name
            else:
                if fam is None or current != name:
                    errs.append("line %d: TYPE of %s not right after its HELP" % (ln, name))
                    continue
                if fam["type"] is not None:
                    errs.append("line %d: second TYPE for %s" % (ln, name))
                if fam["samples"]:
                    errs.append("line %d: TYPE of %s after its samples" % (ln, name))
                if rest not in TYPES:
                    errs.append("line %d: unknown type %r" % (ln, rest))
                fam["type"] = rest
            continue
        try:
            s = parse_sample(line, errs, ln)
        except ValueError as e:
            errs.append("line %d: %s: %r" % (ln, e, line[:120]))
            continue
        fname = family_of(s.name, families)
        if fname is None:
            errs.append("line %d: sample %s without HELP/TYPE" % (ln, s.name))
            continue
        fam = families[fname]
        if fam["type"] is None:
            errs.append("line %d: sample %s before the TYPE of its family" % (ln, s.name))
        if fname != current:
            errs.append("line %d: sample %s away from its family's block" % (ln, s.name))
        if fam["type"] == "counter" and not s.name.endswith("_total"):
            errs.append("line %d: counter %s does not end in _total" % (ln, s.name))
        if fam["type"] in ("counter", "histogram") and (math.isnan(s.value) or s.value < 0 or math.isinf(s.value)):
            errs.append("line %d: %s: counter value %r is not a finite number >= 0" % (ln, s.name, s.value))
        key = (s.name, tuple(sorted(s.labels.items())))
        if key in seen_series:
            errs.append("line %d: duplicate series %s%s" % (ln, s.name, dict(key[1])))
        seen_series.add(key)
        fam["samples"].append(s)
        samples.append(s)
    for name, fam in families.items():
        if fam["type"] is None:
            errs.append("line %d: %s has no TYPE" % (fam["line"], name))
        if fam["type"] == "histogram":
            errs.extend(check_histogram(name, fam["samples"]))
    return families, samples, errs


def check_histogram(name, samples):
    errs, series = [], {}
    for s in samples:
        base = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        g = series.setdefault(base, {"buckets": [], "sum": None, "count": None})
        if s.name == name + "_bucket":
            if "le" not in s.labels:
                errs.append("line %d: %s_bucket without le" % (s.line, name))
                continue
            try:
                le = parse_value(s.labels["le"])
            except ValueError:
                errs.append("line %d: %s: bad le %r" % (s.line, name, s.labels["le"]))
                continue
            g["buckets"].append((le, s.value, s.line))
        elif s.name == name + "_sum":
            g["sum"] = s.value
        elif s.name == name + "_count":
            g["count"] = s.value
        else:
            errs.append("line %d: %s in histogram %s" % (s.line, s.name, name))
    for base, g in series.items():
        where = "%s%s" % (name, dict(base))
        b = g["buckets"]
        if not b:
            errs.append("%s: no buckets" % where)
            continue
        for (l0, c0, _), (l1, c1, ln) in zip(b, b[1:]):
            if not l1 > l0:
                errs.append("line %d: %s: le %g not above the previous %g" % (ln, where, l1, l0))
            if c1 < c0:
                errs.append("line %d: %s: bucket count %g below the previous %g" % (ln, where, c1, c0))
        if b[-1][0] != math.inf:
            errs.append("%s: last bucket is not le=\"+Inf\"" % where)
        if g["count"] is None:
            errs.append("%s: no _count" % where)
        elif b[-1][1] != g["count"]:
            errs.append("%s: +Inf bucket %g != _count %g" % (where, b[-1][1], g["count"]))
        if g["sum"] is None:
            errs.append("%s: no _sum" % where)
    return errs


def drop_reasons(path):
    text = open(path).read()
    return re.findall(r"^\s*X\((\w+),", text, re.M)


def load(path):
    fams, samples, errs = parse(open(path).read())
    if errs:
        raise SystemExit("%s does not parse: %s" % (path, errs[0]))
    return samples


def match(samples, name, want):
    return [s for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in want.items())]


def selector(args):
    want = {}
    for a in args:
        k, _, v = a.partition("=")
        want[k] = v
    return want


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[0]
    if cmd == "check":
        path, drop_h, require = argv[1], None, []
        rest = argv[2:]
        while rest:
            if rest[0] == "--drop-h" and len(rest) > 1:
                drop_h, rest = rest[1], rest[2:]
            elif rest[0] == "--require" and len(rest) > 1:
                require, rest = [r for r in rest[1].split(",") if r], rest[2:]
            else:
                print("unknown option %s" % rest[0], file=sys.stderr)
                return 2
        fams, samples, errs = parse(open(path).read())
        for r in require:
            if r not in fams:
                errs.append("family %s missing" % r)
            elif not fams[r]["samples"]:
                errs.append("family %s has no samples" % r)
        if drop_h:
            want = drop_reasons(drop_h)
            got = [s.labels.get("reason") for s in samples if s.name == "tunless_drops_total"]
            if not want:
                errs.append("no reasons found in %s" % drop_h)
            if sorted(got) != sorted(want):
                errs.append("tunless_drops_total reasons %s != drop.h %s" % (got, want))
        for e in errs:
            print(e)
        print("%d families, %d samples, %d problems" % (len(fams), len(samples), len(errs)))
        return 1 if errs else 0
    if cmd == "get":
        m = match(load(argv[1]), argv[2], selector(argv[3:]))
        if not m:
            print("no sample %s %s" % (argv[2], argv[3:]), file=sys.stderr)
            return 1
        v = sum(s.value for s in m)
        print(int(v) if v == int(v) else v)
        return 0
    if cmd == "grew":
        want = selector(argv[4:])
        a, b = match(load(argv[1]), argv[3], want), match(load(argv[2]), argv[3], want)
        va, vb = sum(s.value for s in a), sum(s.value for s in b)
        print("%s %s: %g -> %g" % (argv[3], want or "", va, vb))
        return 0 if a and b and vb > va else 1
    if cmd == "monotone":
        fams, old, _ = parse(open(argv[1]).read())
        _, new, _ = parse(open(argv[2]).read())
        newv = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in new}
        bad = 0
        for s in old:
            fname = family_of(s.name, fams)
            if fname is None or fams[fname]["type"] not in ("counter", "histogram"):
                continue
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in newv and newv[key] < s.value:
                print("%s%s went down: %g -> %g" % (s.name, s.labels, s.value, newv[key]))
                bad += 1
        return 1 if bad else 0
    if cmd == "fetch":
        try:
            with urllib.request.urlopen(argv[1], timeout=5) as r:
                body = r.read()
                status = r.status
        except (urllib.error.URLError, OSError) as e:
            print("fetch %s: %s" % (argv[1], e), file=sys.stderr)
            return 1
        if len(argv) > 2:
            open(argv[2], "wb").write(body)
        else:
            sys.stdout.buffer.write(body)
        return 0 if status == 200 else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
