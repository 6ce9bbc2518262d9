#!/usr/bin/env python3
"""Per process (PIDS, comma-separated): its samples by the system call they are in (the last
__x64_sys_* frame), user space, or other kernel work; and how many of them ran a softirq inside.
  profile-syscalls.py SCRIPT PIDS"""
import sys, collections
samples=[]; cur=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: samples.append(cur); cur=None
        continue
    if not line.startswith("\t") and not line.startswith(" "*8):
        f=line.split(); cur={"comm":f[0],"pid":f[1].split("/")[0],"fr":[]}
    else:
        p=line.strip().split(None,1)
        if len(p)<2: continue
        sym,_,dso=p[1].rpartition(" (")
        cur["fr"].append(sym)
if cur: samples.append(cur)
pids=sys.argv[2].split(",")
for pid in pids:
    S=[s for s in samples if s["pid"]==pid and s["comm"]!="tunlessd"]
    n=len(S); agg=collections.Counter(); soft=collections.Counter()
    for s in S:
        fr=s["fr"]
        sc=[x for x in fr if x.startswith("__x64_sys_") or x.startswith("__do_sys_")]
        key=sc[-1] if sc else ("user" if not any(x in ("entry_SYSCALL_64_after_hwframe","asm_sysvec_apic_timer_interrupt") for x in fr) else "kernel-other")
        agg[key]+=1
        if sc and "handle_softirqs" in fr or "do_softirq" in fr: soft[key]+=1
    print("pid",pid,"samples",n)
    for k,v in agg.most_common(14): print("  %-40s %5.1f %%  (softirq inside %5.1f %%)"%(k,100*v/n,100*soft[k]/n))
