#!/usr/bin/env python3
# Joins the probe files of benchmarks/gateway-probe.sh OUTDIR (client cli.txt, engines eng.txt, gateway gw.txt;
# System.nanoTime, the same clock in the three processes on Linux) by request id and prints p50/p90/p99/mean of
# each leg: direct (d) and through the gateway (g), the latter split by whether the upstream connection ran on
# the event loop of the client connection (same) or on another (cross).
import sys, statistics as st
d = sys.argv[1]
cli = {}
for l in open(d+'/cli.txt'):
    side, rid, t0, fb, tok, tot = l.split()
    cli[rid] = (side, int(t0), int(fb), int(tok), int(tot))
gw = {}; S=None; up = {}  # up: the id the engine got (the gateway's own) -> the client's
for l in open(d+'/gw.txt'):
    if l.startswith('# request_id'): S=[x for x in l.split()[2:] if not x.startswith('thread_')]; continue
    if l.startswith('# upstream '): _, _, c, u = l.split(); up[u] = c; continue
    if l.startswith('#'): continue
    p = l.split(); v=list(map(int, p[1:])); n=len(v)//2
    gw[p[0]] = (dict(zip(S, v[:n])), dict(zip(S, v[n:])))
eng = {}
for l in open(d+'/eng.txt'):
    rid, r, f, e = l.split()
    eng[up.get(rid, rid)] = (int(r), int(f), int(e))
def q(v, p):
    v = sorted(v); return v[min(len(v)-1, max(0, int(-(-p*len(v)//1))-1))]/1e6
def show(name, v):
    print(f"  {name:38s} p50 {q(v,.5):8.3f}  p90 {q(v,.9):8.3f}  p99 {q(v,.99):8.3f}  mean {st.mean(v)/1e6:8.3f} ms")
for side,kind in (('d',None),('g',None),('g','same'),('g','cross')):
    ids = [r for r,c in cli.items() if c[0]==side and r in eng and (side=='d' or r in gw)]
    if kind: ids=[r for r in ids if (gw[r][1]['received']!=gw[r][1]['first_content'])==(kind=='cross')]
    print(side, kind, len(ids))
    if not ids: continue
    show('client t0 -> engine body read', [eng[r][0]-cli[r][1] for r in ids])
    show('engine first flushed -> client token', [cli[r][1]+cli[r][3]-eng[r][1] for r in ids])
    show('client first token', [cli[r][3] for r in ids])
    if side=='g':
        g=lambda r,s: gw[r][0][s]
        show('client t0 -> received', [g(r,'received')-cli[r][1] for r in ids])
        k=S.index('request_sent') if 'request_sent' in S else S.index('upstream_write')
        for a,b in zip(S[:k], S[1:k+1]):
            show(f'{a} -> {b}', [g(r,b)-g(r,a) for r in ids])
        show(S[k]+' -> engine body read', [eng[r][0]-g(r,S[k]) for r in ids])
        show('engine read -> upstream_headers', [g(r,'upstream_headers')-eng[r][0] for r in ids])
        show('engine first flushed -> first_content', [g(r,'first_content')-eng[r][1] for r in ids])
        show('first_content -> first_content_sent', [g(r,'first_content_sent')-g(r,'first_content') for r in ids])
        show('first_content_sent -> client token', [cli[r][1]+cli[r][3]-g(r,'first_content_sent') for r in ids])
