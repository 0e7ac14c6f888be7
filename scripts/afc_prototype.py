"""A prototype of adaptive feedback cancellation (issue 36; docs/feedback.md), not LiveMic code:
the rooms of FeedbackRoomTests (a 150 Hz-6 kHz loudspeaker band, resonances, tanh, a path delay
plus one 64-frame block, a gain G) around a forward path of tanh alone (no chain), with a block
NLMS filter of the loudspeaker path on LiveMic's output, prewhitened by a 20th-order linear
prediction of the cancelled signal (PEM-AFC), and optionally a frequency shift in the forward
path. Prints each G tried and the largest stable one by the room test's rule.

  python3 scripts/afc_prototype.py ROOM off|afc [TAPS MU START_G SHIFT_HZ]
  (NOISE=1: a white-noise source instead of the speech)

Needs numpy and scipy (a measuring script's PyPI packages) and espeak-ng and sox for the speech,
made at /tmp/sp48.wav on first use."""
import os, subprocess
if not os.path.exists('/tmp/sp48.wav'):
    subprocess.run(['espeak-ng', '-v', 'en', '-s', '170', '-w', '/tmp/sp.wav', 'Testing the feedback suppressor in a room: one, two, three, four, five. The singer walks across the stage and keeps on singing, aaah, oooh.'], check=True)
    subprocess.run(['sox', '/tmp/sp.wav', '-r', '48000', '/tmp/sp48.wav'], check=True)
import numpy as np, scipy.signal as sg, scipy.linalg as sl, scipy.io.wavfile as wf, sys
fs=48000; B=64
def peaking(f,q,gdb):
    A=10**(gdb/40); w=2*np.pi*f/fs; al=np.sin(w)/(2*q); c=np.cos(w)
    b=np.array([1+al*A,-2*c,1-al*A]); a=np.array([1+al/A,-2*c,1-al/A]); return b/a[0],a/a[0]
def hp(f,q=0.707):
    w=2*np.pi*f/fs; al=np.sin(w)/(2*q); c=np.cos(w)
    b=np.array([(1+c)/2,-(1+c),(1+c)/2]); a=np.array([1+al,-2*c,1-al]); return b/a[0],a/a[0]
def lp(f,q=0.707):
    w=2*np.pi*f/fs; al=np.sin(w)/(2*q); c=np.cos(w)
    b=np.array([(1-c)/2,(1-c),(1-c)/2]); a=np.array([1+al,-2*c,1-al]); return b/a[0],a/a[0]
ROOMS={'short':(5,[(1200,9,6)]),'issue':(12,[(1500,9,5)]),'long':(40,[(2500,9,6)]),'two':(12,[(700,9,6),(2900,8,8)]),'walk':(12,[(1000,9,6)],(18,[(1800,9,6)]))}
def sections(res): return [hp(150),lp(6000)]+[peaking(*r) for r in res]
r,x=wf.read('/tmp/sp48.wav'); x=x.astype(np.float64)/32768
import os
if os.environ.get('NOISE'): x=np.random.default_rng(1).standard_normal(len(x))
x*=0.1/np.sqrt(np.mean(x**2)); speechN=len(x); x=np.concatenate([x,np.zeros(fs)])
def lpc(seg,order):
    r=np.correlate(seg,seg,'full')[len(seg)-1:len(seg)+order]
    if r[0]<=1e-12: return np.r_[1,np.zeros(order)]
    r[0]*=1.0001; r[1:]*=np.exp(-0.5*(2*np.pi*40/fs*np.arange(1,order+1))**2)
    return np.r_[1,-sl.solve_toeplitz(r[:-1],r[1:])]
def run(G, room, afc=None, L=1024, mu=0.005, order=20):
    global Acur; name=room; spec=ROOMS[room]; delay=int(spec[0]*fs/1000)+B; secs=sections(spec[1])
    zi=[np.zeros(2) for _ in secs]
    g=0 if G is None else 10**(G/20)
    N=len(x); ring=np.zeros(N+8192); y=np.zeros(N+B); mic=np.zeros(N)
    h=np.zeros(L); D0=B; comp=1.0
    for off in range(0,N,B):
        n=min(B,N-off)
        m=x[off:off+n]+ring[off:off+n]; mic[off:off+n]=m
        if afc and off>=D0+L+order+B:
            # regressor: y[t-D0-k], k=0..L-1 for t in block
            lo=off-D0-(L-1)-order; hi=off+n-D0
            ywin=y[lo:hi]
            # prewhitening filter from recent e (last 20 ms of output of AFC = chain input)
            A=Acur
            yw=sg.lfilter(A,[1],ywin)[order:]   # valid part, len = L-1+n
            mwin=mic[off-order:off+n]; mw=sg.lfilter(A,[1],mwin)[order:]
            Y=np.lib.stride_tricks.sliding_window_view(yw,L)[:, ::-1]  # rows t: y[t-D0-k]
            est=Y@h
            # the cancellation itself on the raw signals
            Yr=np.lib.stride_tricks.sliding_window_view(ywin[order:],L)[:, ::-1]
            e=m-Yr@h
            ew=mw-est
            h+=mu*(Y.T@ew)/(np.sum(Y*Y)/n+L*1e-5)
        else:
            e=m.copy()
        ebuf[off:off+n]=e
        if afc and (off//B)%4==0 and off>=960:
            Acur=lpc(ebuf[off+n-960:off+n]*np.hanning(960),order)
        # forward path: simple slow compressor/limiter (unity below -20 dBFS rms-ish)
        if SHIFT:
            nn=np.arange(off,off+n)
            # analytic signal by FIR Hilbert (63 taps, delay 31) on a history buffer
            ebh[off+64:off+64+n]=e
            seg=ebh[off+64-62:off+64+n]
            hil=np.convolve(seg,HT,'valid')
            re=ebh[off+64-31:off+64+n-31]
            ph=2*np.pi*SHIFT*nn/fs
            e2=re*np.cos(ph)-hil*np.sin(ph)
        else: e2=e
        out=np.tanh(e2*1.0)
        y[off:off+n]=out
        z=out
        for i,(b,a) in enumerate(secs):
            z,zi[i]=sg.lfilter(b,a,z,zi=zi[i])
        ring[off+delay:off+delay+n]+=g*np.tanh(z)
        if len(spec)>2 and off>=speechN//2 and off<speechN//2+B:
            delay=int(spec[2][0]*fs/1000)+B; secs=sections(spec[2][1]); zi=[np.zeros(2) for _ in secs]
    return y[:N]
def db(v): return 10*np.log10(np.mean(v**2)+1e-30)
def verdict(looped,open_):
    sp=db(open_[:speechN]); w=4800; burst=-100
    for s in range(0,len(looped)-w,w//2):
        ref=max(db(open_[s:s+w]),sp-20); v=db(looped[s:s+w])-ref
        if v>burst: burst=v; global WHEN; WHEN=s/fs
    tail=db(looped[-19200:])-sp
    return burst<=6 and tail<=-20, burst, tail
room=sys.argv[1]; afc=sys.argv[2]=='afc'; L=int(sys.argv[3]) if len(sys.argv)>3 else 1024; mu=float(sys.argv[4]) if len(sys.argv)>4 else 0.005
SHIFT=float(sys.argv[6]) if len(sys.argv)>6 else 0
k=np.arange(63)-31
HT=np.where(k%2!=0,2/(np.pi*np.where(k==0,1,k)),0)*np.hanning(63)
ebh=np.zeros(len(x)+200)
ebuf=np.zeros(len(x)); Acur=np.r_[1,np.zeros(20)]
open_=run(None,room)
g=float(sys.argv[5]) if len(sys.argv)>5 else -4
best=None
while g<30:
    ebuf=np.zeros(len(x)); ebh[:]=0; Acur=np.r_[1,np.zeros(20)]
    ok,bu,ta=verdict(run(g,room,afc,L,mu),open_)
    print(room,'afc' if afc else 'off',g,ok,round(bu,1),round(ta,1),'at',WHEN,flush=True)
    if not ok: break
    best=g; g+=2
print('BEST',room,afc,best)
