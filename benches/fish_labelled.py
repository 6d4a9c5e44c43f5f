#!/usr/bin/env python3
"""fish's man-page completion generator on atip's labelled set: option precision and
recall against tests/fixtures/man/labels, the same labels tests/infer_quality.rs scores
atip's inference with. Run by hand (needs fish's create_manpage_completions.py):

    benches/fish_labelled.py [path/to/create_manpage_completions.py]
"""
import glob, os, shlex, subprocess, sys, tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
gen = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/fish/tools/create_manpage_completions.py"
if not os.path.exists(gen):
    sys.exit(f"fish's generator not found at {gen} (apt-get install fish)")
pages = sorted(glob.glob(os.path.join(root, "tests/fixtures/man/man*/*.gz")))
out = tempfile.mkdtemp()
subprocess.run([sys.executable, gen, "-d", out, *pages], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL, check=False)

tp = fp = fn = 0
for lf in sorted(glob.glob(os.path.join(root, "tests/fixtures/man/labels/*.txt"))):
    tool = os.path.basename(lf).rsplit(".", 2)[0]
    flags = set()
    for line in open(lf):
        line = line.strip()
        if not line or line.startswith(("#", "command:", "enum:")):
            continue
        flags.update(line.split())
    got = set()
    f = os.path.join(out, tool + ".fish")
    if os.path.exists(f):
        for line in open(f):
            if not line.startswith("complete"):
                continue
            try:
                w = shlex.split(line)
            except ValueError:
                continue
            for i, word in enumerate(w[:-1]):
                prefix = {"-s": "-", "-l": "--", "-o": "-"}.get(word)
                if prefix:
                    got.add(prefix + w[i + 1])
    t, p, n = len(got & flags), len(got - flags), len(flags - got)
    tp, fp, fn = tp + t, fp + p, fn + n
    print(f"{tool:<14} labelled {len(flags):4}  found {t:4}  extra {p:3}  missing {n:4}")
print(f"fish: option precision {100 * tp / max(1, tp + fp):.1f}%, "
      f"recall {100 * tp / max(1, tp + fn):.1f}% over {tp + fn} labelled flags")
