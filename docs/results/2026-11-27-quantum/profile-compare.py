#!/usr/bin/env python3
"""Whole-machine profiles compared per Gbit/s: perf script -F comm,pid,tid,ip,sym,dso of
`perf record -a -g` (sitting.sh, step profile), each sample put in the first category whose
function is on its stack (the rules in order), counted per Gbit/s of the profiled run; then the
leaves and roots of "kernel other".  profile-compare.py SCRIPT GBIT_S [SCRIPT GBIT_S ...]"""
import sys, collections
def load(fn):
    samples=[]; cur=None
    for line in open(fn):
        if not line.strip():
            if cur: samples.append(cur); cur=None
            continue
        if not line.startswith("\t") and not line.startswith(" "*8):
            f=line.split(); cur={"comm":f[0],"fr":[],"dso":[]}
        else:
            p=line.strip().split(None,1)
            if len(p)<2: continue
            sym,_,dso=p[1].rpartition(" (")
            cur["fr"].append(sym); cur["dso"].append(dso)
    if cur: samples.append(cur)
    return samples
rules=[("idle","swapper",None),
("crypto",None,lambda s: "libcrypto" in s["dso"][0] or "chacha20" in s["fr"][0] or "poly1305" in s["fr"][0]),
("sched_yield","__x64_sys_sched_yield",None),
("scheduler/futex/poll",None,lambda s: any(x in s["fr"] for x in ("schedule","__schedule","futex_wait","futex_wake","do_poll","do_epoll_wait","do_nanosleep")) ),
("tcp rx (endpoint)","tcp_v4_rcv",None),
("tcp tx (endpoint app)","tcp_sendmsg",None),
("tcp tx from ack","tcp_write_xmit",None),
("iperf3 recv copy","tcp_recvmsg",None),
("skb_segment (sw GSO)","skb_segment",None),
("gro","dev_gro_receive",None),
("bridge","br_handle_frame",None),
("udp gro rx","udp_gro_receive",None),
("copy to user","_copy_to_iter",None),
("copy from user","_copy_from_iter",None),
("veth_xmit/xmit","dev_hard_start_xmit",None),
("user other",None,lambda s: not any(d.startswith("[kernel") or "kallsyms" in d for d in s["dso"][:1])),
("kernel other",None,lambda s: True)]
def cat(s):
    if s["comm"]=="swapper": return "idle"
    for name,f,fn in rules[1:]:
        if f and f in s["fr"]: return name
        if fn and s["fr"] and fn(s): return name
    return "?"
res={}
for fn,g in zip(sys.argv[1::2],sys.argv[2::2]):
    S=load(fn); c=collections.Counter(cat(s) for s in S); res[fn]=(c,len(S),float(g))
names=[r[0] for r in rules]
print("%-24s"%"samples per Gbit/s"+"".join("%14s"%fn.split('-',1)[1][:12] for fn in res))
for n in names:
    print("%-24s"%n+"".join("%14.0f"%(res[fn][0][n]/res[fn][2]) for fn in res))
print("%-24s"%"total"+"".join("%14.0f"%(res[fn][1]/res[fn][2]) for fn in res))
print()
for fn in res:
    S=load(fn); g=res[fn][2]
    ko=[s for s in S if cat(s)=="kernel other"]
    lc=collections.Counter(s["fr"][0] for s in ko)
    print(fn, "kernel other leaves per Gbit:", ", ".join("%s %.0f"%(k,v/g) for k,v in lc.most_common(25)))
    # the syscall / context root
    rc=collections.Counter()
    for s in ko:
        sc=[x for x in s["fr"] if x.startswith("__x64_sys_") or x in ("handle_softirqs","ret_from_fork_asm","asm_sysvec_apic_timer_interrupt")]
        rc[(s["comm"][:12], sc[-1] if sc else "?")]+=1
    print("  roots:", ", ".join("%s %.0f"%(k,v/g) for k,v in rc.most_common(12)))
