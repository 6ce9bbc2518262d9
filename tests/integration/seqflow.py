#!/usr/bin/env python3
"""seqflow: a sequence-numbered UDP stream, to see order and loss through a tunnel.

  seqflow.py recv --bind IP --port P [--idle S] [--max-seconds S] [--ready FILE]
      Receives until no datagram came for --idle seconds (after the first) or --max-seconds
      passed; prints one JSON object: received, unique, duplicates, reordered (datagrams whose
      number is below one already seen), lost (numbers below the highest seen that never
      came, plus any the sender announced and never came), highest, and the receive rate of
      the middle of the stream (first and last 10 % of the time left out): pps, bytes/s.
      --ready FILE is created once the socket is bound.
  seqflow.py send --dst IP --port P --count N --pps R [--size B] [--burst K]
      Sends N datagrams of B bytes (>= 16), numbers 0..N-1, at R per second in bursts of K;
      the last datagram (number N-1) carries the count. Prints {"sent": N, "seconds": t}.
"""
import argparse
import json
import os
import socket
import struct
import sys
import time

HDR = struct.Struct("!QQ")  # sequence number, count of the stream (0 if unknown)


def recv(a):
    fam = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((a.bind, a.port))
    if a.ready:
        open(a.ready, "w").close()
    seen = set()
    times = []
    highest = -1
    reordered = dups = received = nbytes = 0
    announced = 0
    start = time.monotonic()
    s.settimeout(0.2)
    while True:
        now = time.monotonic()
        if now - start > a.max_seconds:
            break
        if times and now - times[-1][0] > a.idle:
            break
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        t = time.monotonic()
        if len(data) < HDR.size:
            continue
        seq, count = HDR.unpack_from(data)
        received += 1
        nbytes += len(data)
        times.append((t, len(data)))
        announced = max(announced, count)
        if seq in seen:
            dups += 1
            continue
        seen.add(seq)
        if seq < highest:
            reordered += 1
        highest = max(highest, seq)
    total = max(highest + 1, announced)
    res = {"received": received, "unique": len(seen), "duplicates": dups, "reordered": reordered,
           "lost": total - len(seen), "highest": highest, "expected": total}
    if len(times) >= 10:
        t0, t1 = times[0][0], times[-1][0]
        lo, hi = t0 + 0.1 * (t1 - t0), t1 - 0.1 * (t1 - t0)
        mid = [b for t, b in times if lo <= t <= hi]
        if hi > lo:
            res["mid_pps"] = round(len(mid) / (hi - lo), 1)
            res["mid_bytes_per_s"] = round(sum(mid) / (hi - lo), 1)
    print(json.dumps(res))


def send(a):
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.connect((a.dst, a.port))
    pad = b"\0" * (max(a.size, HDR.size) - HDR.size)
    start = time.monotonic()
    sent = 0
    while sent < a.count:
        due = start + sent / a.pps
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for _ in range(min(a.burst, a.count - sent)):
            count = a.count if sent == a.count - 1 else 0
            msg = HDR.pack(sent, count) + pad
            while True:
                try:
                    s.send(msg)
                    break
                except (BlockingIOError, ConnectionRefusedError):
                    # A full socket buffer (or an ICMP error from an earlier datagram): try again.
                    time.sleep(0.0005)
            sent += 1
    print(json.dumps({"sent": sent, "seconds": round(time.monotonic() - start, 3)}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--idle", type=float, default=2.0)
    r.add_argument("--max-seconds", type=float, default=120.0)
    r.add_argument("--ready")
    t = sub.add_parser("send")
    t.add_argument("--dst", required=True)
    t.add_argument("--port", type=int, required=True)
    t.add_argument("--count", type=int, required=True)
    t.add_argument("--pps", type=float, required=True)
    t.add_argument("--size", type=int, default=1200)
    t.add_argument("--burst", type=int, default=16)
    a = p.parse_args()
    if a.cmd == "recv":
        recv(a)
    else:
        if a.count < 1 or a.pps <= 0 or a.burst < 1:
            p.error("--count, --pps and --burst must be positive")
        send(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
