import re, glob, collections
def parse(f):
    d = {}
    for line in open(f):
        m = re.match(r"^(\S.*?\S)\s{2,}(forward|backward|forward \+ backward|backward, dy from the graph|forward, no grad)\s+([\d. ]+?)\s+([\d.]+|nan)$", line.rstrip())
        if not m: continue
        nums = line[len(m.group(1)):].split()
        # columns after phase words
        phase = m.group(2)
        rest = line.rstrip()[line.index(phase)+len(phase):].split()
        d[(m.group(1), phase)] = [float(x) for x in rest]
    return d
cols = {}
res = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("base", "new"):
    for f in sorted(glob.glob("/tmp/ab.%s.*.txt" % v)):
        names = ["torch", "torch 1x8", "ours"] + (["ours via op"] if v == "new" else [])
        cols[v] = names
        for k, vals in parse(f).items():
            for n, x in zip(names, vals):
                res[k][(v, n)].append(x)
order = ["layer_norm()", "LayerNorm module", "rms_norm()", "RMSNorm module", "add_layer_norm()", "add_rms_norm()"]
phases = ["forward", "backward", "forward + backward", "backward, dy from the graph", "forward, no grad"]
print("| call | phase | torch 1x8 | ours before | ours after | after / before | after / torch 1x8 | ours after via op |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in order:
    for p in phases:
        k = (c, p)
        if k not in res: continue
        r = res[k]
        t = min(r[("new", "torch 1x8")] + r[("base", "torch 1x8")])
        b = min(r[("base", "ours")]); a = min(r[("new", "ours")])
        via = min(r[("new", "ours via op")]) if r.get(("new", "ours via op")) else float("nan")
        print("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (c, p, t, b, a, a/b, a/t, via))
