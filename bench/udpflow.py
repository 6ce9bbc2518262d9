#!/usr/bin/env python3
"""A counted UDP stream for the benchmarks (stdlib only): a video-like constant bit rate sent
in frames of packets, each packet numbered and stamped, and a receiver that counts them.

  udpflow.py send DST PORT --size B --fps F --burst N --seconds T --out SENT.json
      Every 1/F s, a frame of N datagrams of B bytes (payload: sequence number, send time).
      SENT.json: {"sent": packets, "seconds": ..., "mbit_s": ...}. Datagrams the kernel refused
      (ENOBUFS/EAGAIN) are retried, so every counted packet left the sender's socket.
  udpflow.py recv PORT --idle S --out RECV.json [--ready FILE]
      Counts distinct sequence numbers until S seconds pass without a datagram (after the
      first one) and records one-way delays (same clock: the lab's namespaces share it).
      RECV.json: {"received", "duplicates", "max_seq", "delay_p50_ms", "delay_p99_ms"}.
"""
import argparse
import json
import socket
import struct
import sys
import time

HDR = struct.Struct("!QQ")


def send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    pad = b"\0" * max(0, a.size - HDR.size)
    seq, start = 0, time.monotonic()
    period = 1.0 / a.fps
    frames = int(a.seconds * a.fps)
    for f in range(frames):
        t = start + f * period
        d = t - time.monotonic()
        if d > 0:
            time.sleep(d)
        for _ in range(a.burst):
            msg = HDR.pack(seq, time.time_ns()) + pad
            while True:
                try:
                    s.sendto(msg, (a.dst, a.port))
                    break
                except (BlockingIOError, InterruptedError):
                    time.sleep(0.0005)
                except OSError as e:  # ENOBUFS: the local qdisc was full; retry
                    if e.errno != 105:
                        raise
                    time.sleep(0.0005)
            seq += 1
    el = time.monotonic() - start
    json.dump({"sent": seq, "seconds": round(el, 3), "frames": frames, "burst": a.burst,
               "size": a.size, "fps": a.fps,
               "mbit_s": round(seq * a.size * 8 / el / 1e6, 3) if el else 0}, open(a.out, "w"))


def recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.bind(("0.0.0.0", a.port))
    if a.ready:
        open(a.ready, "w").close()
    seen, dups, delays, max_seq = set(), 0, [], -1
    s.settimeout(a.wait)
    while True:
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        now = time.time_ns()
        s.settimeout(a.idle)
        if len(data) < HDR.size:
            continue
        seq, ts = HDR.unpack_from(data)
        if seq in seen:
            dups += 1
            continue
        seen.add(seq)
        max_seq = max(max_seq, seq)
        delays.append((now - ts) / 1e6)
    delays.sort()

    def q(p):
        return round(delays[min(len(delays) - 1, int(p * len(delays)))], 3) if delays else None
    json.dump({"received": len(seen), "duplicates": dups, "max_seq": max_seq,
               "delay_p50_ms": q(0.5), "delay_p99_ms": q(0.99),
               "delay_max_ms": round(delays[-1], 3) if delays else None}, open(a.out, "w"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("dst")
    ps.add_argument("port", type=int)
    ps.add_argument("--size", type=int, default=1200)
    ps.add_argument("--fps", type=float, default=30)
    ps.add_argument("--burst", type=int, default=20)
    ps.add_argument("--seconds", type=float, default=5)
    ps.add_argument("--out", required=True)
    pr = sub.add_parser("recv")
    pr.add_argument("port", type=int)
    pr.add_argument("--idle", type=float, default=2.0)
    pr.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the first datagram")
    pr.add_argument("--out", required=True)
    pr.add_argument("--ready")
    a = p.parse_args()
    if a.cmd == "send":
        if a.size < HDR.size or a.fps <= 0 or a.burst < 1:
            sys.exit("udpflow.py: --size >= %d, --fps > 0, --burst >= 1" % HDR.size)
        send(a)
    else:
        recv(a)


if __name__ == "__main__":
    main()
