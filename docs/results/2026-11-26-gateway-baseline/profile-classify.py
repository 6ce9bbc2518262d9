#!/usr/bin/env python3
"""The profile table of the NIC lab (nic-profile-P8-report.txt): perf script -F comm,pid,tid,ip,sym,dso
of `perf record -a -g` (sitting-nic.sh), each sample put in one place by its stack (the
first of the rules below, in their order, that the stack matches), per process; then the top leaf symbols of each worker."""
import sys, collections
# perf script -F comm,pid,tid,ip,sym,dso: a header line then frames (leaf first)
samples = []
cur = None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: samples.append(cur); cur = None
        continue
    if not line.startswith("\t") and not line.startswith(" " * 8):
        f = line.split()
        cur = {"comm": f[0], "pid": f[1].split("/")[0], "frames": []}
    else:
        parts = line.strip().split(None, 1)
        if len(parts) < 2: continue
        rest = parts[1]
        sym, _, dso = rest.rpartition(" (")
        cur["frames"].append((sym, dso.rstrip(")")))
if cur: samples.append(cur)

def cat(s):
    fr = s["frames"]
    if not fr: return "?"
    sym, dso = fr[0]
    syms = [x[0] for x in fr]
    if "kallsyms" not in dso and not dso.startswith("[") :
        if "libcrypto" in dso: return "user: crypto (libcrypto)"
        if dso.endswith("tunlessd"): return "user: tunlessd"
        if "af_xdp" in dso: return "user: net_af_xdp PMD"
        return "user: libc, vdso, other libraries"
    if "bpf_prog" in dso or "bpf_prog" in sym: return "kernel: XDP programs"
    def has(*names): return any(any(n in x for n in names) for x in syms)
    if has("sys_sched_yield"): return "kernel: sched_yield (the worker gives its CPU away)"
    if has("tcp_v4_rcv", "tcp_v6_rcv"): return "kernel: the endpoint's TCP receive (in the worker's softirq)"
    if has("__xsk_rcv", "xsk_map_redirect", "__xsk_map_flush"): return "kernel: AF_XDP receive (XDP redirect, copy into the UMEM)"
    if has("br_handle_frame", "br_forward", "br_nf"): return "kernel: the WAN bridge (br-wan, br_netfilter)"
    if has("veth_poll", "veth_xdp_rcv"): return "kernel: veth NAPI, XDP run"
    if has("process_backlog", "net_rx_action", "handle_softirqs"): return "kernel: softirq receive, other"
    if has("__xsk_generic_xmit"): return "kernel: AF_XDP copy-mode send (skb, copy, veth_xmit)"
    if has("exc_page_fault", "asm_exc_page_fault"): return "kernel: page faults"
    if has("sys_recvfrom", "sys_recvmsg", "sys_poll", "sys_sendto", "sys_sendmsg"): return "kernel: other syscalls"
    if has("schedule", "irq", "timer", "reschedule"): return "kernel: interrupts, timers, scheduling"
    return "kernel: other"

by = collections.defaultdict(collections.Counter)
tot = collections.Counter()
for s in samples:
    key = s["comm"] + ":" + s["pid"]
    by[key][cat(s)] += 1
    tot[key] += 1
N = len(samples)
print("samples", N)
for k, n in tot.most_common(6):
    print("%-24s %5.1f %%" % (k, 100 * n / N))
workers = [k for k in tot if k.startswith("rte-worker")]
W = sum(tot[k] for k in workers)
allc = collections.Counter()
for k in workers: allc.update(by[k])
print("\nworkers (%d samples, %.1f %% of all):" % (W, 100 * W / N))
print("| where | both workers | %s |" % " | ".join(workers))
for c, n in allc.most_common():
    print("| %s | %.1f %% | %s |" % (c, 100 * n / W, " | ".join("%.1f %%" % (100 * by[k][c] / tot[k]) for k in workers)))

print()
for k in sorted(workers):
    c = collections.Counter()
    for s in samples:
        if s["comm"] + ":" + s["pid"] == k and s["frames"]:
            sym, dso = s["frames"][0]
            if "libcrypto" in dso: sym = "(libcrypto)"
            elif sym.startswith("[unknown]") or sym.startswith("0x"): sym = "(%s)" % dso.split("/")[-1]
            c[sym] += 1
    print(k, ", ".join("`%s` %.1f %%" % (s, 100 * n / tot[k]) for s, n in c.most_common(14)))
