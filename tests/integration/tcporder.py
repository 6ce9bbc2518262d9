#!/usr/bin/env python3
"""tcporder: where along a tunnel a TCP stream's segments went out of order.

  tcporder.py check --src IP --cap NAME=PCAP,LINKS ... --point LABEL=NAME:IFACE:in|out:tcp|wg ...
                    [--judge LABEL ...]
      Captures are `tcpdump -i any -y LINUX_SLL2` files, one per network namespace; LINKS is
      that namespace's `ip -o link` (ifindex to name). A point is one interface and direction
      of one capture, listed from the sender to the receiver:
        tcp  the stream's packets (IPv4 from --src): per connection Linux numbers the segments
             with consecutive IPv4 IDs (retransmissions included) and a TSO/GRO packet holds a
             run of them, so a packet whose first ID is below one seen before came late;
        wg   WireGuard transport data messages (type 4) with a payload (keepalives left out):
             per receiver index the 64-bit counter; a message below one seen before came late
             (a UDP GSO packet seen whole shows its first message only; it is counted).
      The last tcp point is the receiver. Each segment late there is placed: the first point
      (sender first) where the packet holding its ID came late, the point before it where it
      was in order, and the wg points between the two with their counters' order. Exit 1 if a
      --judge wg point has a message out of order or none at all, a --judge tcp point (not the
      first) has a packet late that was in order at the tcp point before it or saw no packet,
      or the receiver saw no stream.
  tcporder.py selftest
      Runs the check on made-up captures: in order but for one segment late at the receiver
      (passes, placed after the WAN), and the same with two of the judged point's counters
      swapped (fails); a segment late at the input that the sender sent in order (fails with
      the input judged, passes without) or late (passes). Exit 0 if all came out so.
"""
import argparse
import contextlib
import io
import os
import struct
import sys
import tempfile

SLL2 = 276
OUT = 4  # SLL2 packet type: sent by this host
HDR = struct.Struct("<IIII")
SHOW = 12  # late segments printed one by one; beyond, a count per place


def read_pcap(path):
    """(ifindex, outgoing, network-layer bytes) per packet of a LINUX_SLL2 capture."""
    data = open(path, "rb").read()
    if len(data) < 24:
        return []
    magic = struct.unpack_from("<I", data)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise SystemExit("%s: not a little-endian pcap file" % path)
    if struct.unpack_from("<I", data, 20)[0] != SLL2:
        raise SystemExit("%s: link type is not LINUX_SLL2 (capture with -i any -y LINUX_SLL2)" % path)
    off, pkts = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = HDR.unpack_from(data, off)
        rec = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(rec) < 20:
            continue
        proto, ifindex, ptype = struct.unpack_from(">H2xI2xB", rec)
        if proto == 0x0800:
            pkts.append((ifindex, ptype == OUT, rec[20:]))
    return pkts


def read_links(path):
    names = {}
    for line in open(path):
        f = line.split(":")
        if len(f) > 2 and f[0].strip().isdigit():
            names[f[1].strip().split("@")[0]] = int(f[0])
    return names


def unwrap(prev, raw, bits):
    """raw (mod 2^bits) as the integer nearest prev."""
    if prev is None:
        return raw
    m = 1 << bits
    d = (raw - prev) % m
    return prev + d if d < m // 2 else prev - (m - d)


class TcpPoint:
    """Per connection: packets in capture order as [first ID, late?, arrival index]."""

    def __init__(self, pkts, src):
        self.conns, last, top = {}, {}, {}
        for ip in pkts:
            if len(ip) < 40 or ip[9] != 6 or ip[12:16] != src:
                continue
            ihl = (ip[0] & 15) * 4
            if len(ip) < ihl + 13 or struct.unpack_from(">H", ip, 2)[0] <= ihl + (ip[ihl + 12] >> 4) * 4:
                continue   # no payload: the handshake (a SYN-ACK's ID is 0) and pure ACKs
            key = (ip[12:16], ip[16:20], ip[ihl:ihl + 4])
            pid = unwrap(last.get(key), struct.unpack_from(">H", ip, 4)[0], 16)
            last[key] = pid
            late = key in top and pid <= top[key]
            top[key] = pid if not late else top[key]
            self.conns.setdefault(key, []).append([pid, late, top[key]])

    def holding(self, key, pid):
        """The packet whose ID run holds pid: the greatest first ID <= pid (None if unseen)."""
        best = None
        for p in self.conns.get(key, []):
            if p[0] <= pid and (best is None or p[0] > best[0]):
                best = p
        return best


class WgPoint:
    def __init__(self, pkts):
        self.n = self.late = self.gso = 0
        self.first_late = None
        top, last = {}, {}
        for ip in pkts:
            ihl = (ip[0] & 15) * 4
            if ip[9] != 17 or len(ip) < ihl + 8 + 16:
                continue
            tot = struct.unpack_from(">H", ip, 2)[0]
            pay = tot - ihl - 8
            w = ip[ihl + 8:]
            if w[0] != 4 or pay <= 32:
                continue
            idx = struct.unpack_from("<I", w, 4)[0]
            ctr = struct.unpack_from("<Q", w, 8)[0]
            self.n += 1
            self.gso += pay > 1500
            if idx in top and ctr <= top[idx]:
                self.late += 1
                if self.first_late is None:
                    self.first_late = "receiver index %#x: counter %d after %d" % (idx, ctr, top[idx])
            else:
                top[idx] = ctr
            last[idx] = ctr
        self.indexes = len(top)

    def text(self):
        s = "%d message(s), %d index(es), %d out of order" % (self.n, self.indexes, self.late)
        if self.first_late:
            s += " (first: %s)" % self.first_late
        if self.gso:
            s += ", %d packet(s) over 1500 B (UDP GSO seen whole: the first message only)" % self.gso
        return s


def check(a):
    caps = {}
    for c in a.cap:
        name, rest = c.split("=", 1)
        pcap, links = rest.split(",", 1)
        caps[name] = (read_pcap(pcap), read_links(links))
    src = bytes(int(x) for x in a.src.split("."))
    points = []
    for p in a.point:
        label, rest = p.split("=", 1)
        cap, iface, way, kind = rest.split(":")
        pkts, links = caps[cap]
        if iface not in links:
            raise SystemExit("point %s: no interface %s in capture %s" % (label, iface, cap))
        sel = [ip for i, out, ip in pkts if i == links[iface] and out == (way == "out")]
        points.append((label, kind, TcpPoint(sel, src) if kind == "tcp" else WgPoint(sel)))
    tcp = [i for i, p in enumerate(points) if p[1] == "tcp"]
    rlabel, _, recv = points[tcp[-1]]
    rc = 0
    print("%s: %d connection(s), %d packet(s), %d late" % (
        rlabel, len(recv.conns), sum(len(v) for v in recv.conns.values()),
        sum(p[1] for v in recv.conns.values() for p in v)))
    for label, kind, pt in points:
        if kind == "wg":
            judged = label in (a.judge or [])
            print("%s: %s%s" % (label, pt.text(), " (judged)" if judged else ""))
            if judged and pt.late:
                print("FAIL: %s sent data messages out of counter order" % label)
                rc = 1
            if judged and not pt.n:
                print("FAIL: %s: no data message seen, nothing to judge" % label)
                rc = 1
        elif pt is not recv:
            late = sum(p[1] for v in pt.conns.values() for p in v)
            print("%s: %d packet(s), %d late" % (label, sum(len(v) for v in pt.conns.values()), late))
    for n, i in enumerate(tcp):
        label, _, pt = points[i]
        if label not in (a.judge or []):
            continue
        if n == 0:
            raise SystemExit("--judge %s: the sender's point has no point before it to judge against" % label)
        plabel, _, prev = points[tcp[n - 1]]
        made = [(pid, top) for key, v in pt.conns.items() for pid, late, top in v
                if late and (prev.holding(key, pid) or [0, True])[1] is False]
        print("%s: %d late that were in order at %s (judged)" % (label, len(made), plabel))
        if made:
            print("FAIL: %s: %d packet(s) late that were in order at %s (first: ID %d, %d IDs late)" % (
                label, len(made), plabel, made[0][0] & 0xFFFF, made[0][1] - made[0][0]))
            rc = 1
        if not pt.conns:
            print("FAIL: %s saw no packet of the stream, nothing to judge" % label)
            rc = 1
    places = []
    for key, pkts in recv.conns.items():
        for pid, late, top in pkts:
            if not late:
                continue
            where, prev = None, tcp[0]
            for i in tcp[:-1]:
                h = points[i][2].holding(key, pid)
                if h is None:
                    where = "not seen at %s" % points[i][0]
                    break
                if h[1]:
                    where = i
                    break
                prev = i
            if where is None:
                where = tcp[-1]
            if isinstance(where, str):
                places.append((pid, top, where))
                continue
            if where == tcp[0]:
                place = "already late at %s" % points[where][0]
            else:
                between = [points[i] for i in range(prev + 1, where) if points[i][1] == "wg"]
                place = "in order at %s, late first at %s" % (points[prev][0], points[where][0])
                if between:
                    place += "; between them " + "; ".join(
                        "%s %s" % (lb, "in counter order" if not pt.late else "%d out of counter order" % pt.late)
                        for lb, _, pt in between)
            places.append((pid, top, place))
    for pid, top, place in places[:SHOW]:
        print("late segment: ID %d, %d IDs late at %s: %s" % (pid & 0xFFFF, top - pid, rlabel, place))
    if len(places) > SHOW:
        count = {}
        for _, _, place in places:
            count[place] = count.get(place, 0) + 1
        print("%d late segments, by place: %s" % (len(places), " | ".join("%d %s" % (n, p) for p, n in count.items())))
    if not recv.conns:
        print("FAIL: %s saw no packet of the stream" % rlabel)
        rc = 1
    return rc


# ---- made-up captures for selftest ---------------------------------------------------------------

def _ip(proto, src, dst, ident, payload):
    tot = 20 + len(payload)
    return struct.pack(">BBHHHBBH4s4s", 0x45, 0, tot, ident, 0x4000, 64, proto, 0, bytes(src), bytes(dst)) + payload


def _tcp(ident, plen=1000):
    return _ip(6, (10, 0, 0, 1), (10, 0, 0, 2), ident, struct.pack(">HHIIBBHHH", 40000, 5201, 0, 0, 0x50, 0x10, 0, 0, 0)
               + bytes(plen))


def _wg(ctr, plen=1000):
    body = struct.pack("<IIQ", 4, 0x1234, ctr) + bytes(plen + 16)
    return _ip(17, (10, 9, 0, 1), (10, 9, 0, 2), 0, struct.pack(">HHHH", 51820, 51820, 8 + len(body), 0) + body)


def _write(path, recs):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, SLL2))
        for ifindex, out, ip in recs:
            sll = struct.pack(">H2xIHBB8x", 0x0800, ifindex, 1, OUT if out else 0, 6)
            rec = (sll + ip)[:96]
            f.write(HDR.pack(0, 0, len(rec), len(sll) + len(ip)) + rec)


def selftest():
    d = tempfile.mkdtemp(prefix="tcporder.")
    links = os.path.join(d, "links")
    open(links, "w").write("1: lo: <LOOPBACK>\n2: in@if3: <UP>\n3: wan@if4: <UP>\n4: rcv: <UP>\n5: snd: <UP>\n")
    ids = list(range(100, 110))
    rcv = ids[:4] + ids[5:7] + [ids[4]] + ids[7:]            # ID 104 two late at the receiver

    def run(ctrs, sent=None, judge=("sends",), sender=None):
        recs = [(5, True, _tcp(i)) for i in sender or ids] + [(2, False, _tcp(i)) for i in sent or ids] + [(3, True, _wg(c)) for c in ctrs]
        recs += [(4, False, _tcp(i)) for i in rcv]
        _write(os.path.join(d, "cap"), recs)
        args = argparse.Namespace(src="10.0.0.1", cap=["c=%s,%s" % (os.path.join(d, "cap"), links)],
                                  point=["sender=c:snd:out:tcp", "input=c:in:in:tcp", "sends=c:wan:out:wg", "receiver=c:rcv:in:tcp"],
                                  judge=list(judge))
        return check(args)

    def expect(rc, text, ctrs, sent=None, judge=("sends",), sender=None):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            got = run(ctrs, sent, judge, sender)
        ok = got == rc and text in out.getvalue()
        if not ok:
            print("expected exit %d and %r, got exit %d:\n%s" % (rc, text, got, out.getvalue()), end="")
        return ok

    swapped = "FAIL: sends sent data messages out of counter order"
    ok = expect(0, "ID 104, 2 IDs late at receiver: in order at input, late first at receiver; "
                "between them sends in counter order", range(10))
    ok = expect(1, swapped, [0, 1, 2, 4, 3, 5, 6, 7, 8, 9]) and ok
    ok = expect(0, "ID 104, 2 IDs late at receiver: in order at sender, late first at input", range(10), rcv) and ok
    made = "FAIL: input: 1 packet(s) late that were in order at sender (first: ID 104, 2 IDs late)"
    sent_ok = "input: 0 late that were in order at sender (judged)"
    ok = expect(0, sent_ok, range(10), None, ("sends", "input")) and ok
    ok = expect(1, made, range(10), rcv, ("sends", "input")) and ok
    ok = expect(0, "ID 104, 2 IDs late at receiver: already late at sender", range(10), rcv, ("sends", "input"),
                rcv) and expect(0, sent_ok, range(10), rcv, ("sends", "input"), rcv) and ok
    print("selftest %s: counters 0..9 in order pass, the late segment placed after the WAN; counters 3 and 4 "
          "swapped give \"%s\"; a segment late at the input is placed there, and the input judged gives \"%s\" "
          "unless the sender sent it late too" % ("ok" if ok else "FAILED", swapped, made))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--src", required=True)
    c.add_argument("--cap", action="append", required=True)
    c.add_argument("--point", action="append", required=True)
    c.add_argument("--judge", action="append")
    sub.add_parser("selftest")
    a = ap.parse_args()
    sys.exit(check(a) if a.cmd == "check" else selftest())


if __name__ == "__main__":
    main()
