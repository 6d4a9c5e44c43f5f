# Rank the programs on PATH by how many distinct manual pages refer to them as
# NAME(1) or NAME(8) — a reproducible proxy for how central a program is.
import os, re, gzip, collections, shutil
PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
refs=collections.Counter()
pat=re.compile(rb'(?:\\fB|\\f\(BI|\.BR?\s+|\.Xr\s+|\b)([A-Za-z0-9_][A-Za-z0-9_.+-]*)(?:\\fR|\\fP)?\s*\\?\(\s*([18])\s*\)')
pat2=re.compile(rb'\.Xr\s+([A-Za-z0-9_][A-Za-z0-9_.+-]*)\s+([18])')
for sec in ("man1","man5","man7","man8"):
    d="/usr/share/man/"+sec
    for f in os.listdir(d):
        p=os.path.join(d,f)
        try:
            data=gzip.open(p).read() if f.endswith(".gz") else open(p,'rb').read()
        except Exception: continue
        me=f.split('.')[0]
        names=set(m.group(1) for m in pat.finditer(data))|set(m.group(1) for m in pat2.finditer(data))
        for n in names:
            n=n.decode('latin1')
            if n!=me: refs[n]+=1
out=[]
for n,c in refs.most_common():
    if shutil.which(n, path=PATH): out.append((n,c))
    if len(out)==300: break
with open('/tmp/top300.txt','w') as f:
    for n,c in out: f.write(f"{n}\t{c}\n")
print(len(out)); print(' '.join(n for n,_ in out[:120]))
