"""Where does v4's peak memory come from? One eager bf16 step at seq 1024 under the allocator's
history recorder: prints the peak and the live blocks at that moment, grouped by the line of
our code that allocated them."""
import os
from collections import defaultdict

import torch

from models import build_model, canonical_init
from tinylab.config import RunConfig


def main():
    cfg = RunConfig(version="v4", seq_len=int(os.environ.get("SEQ", "1024")), precision="bf16").validate()
    model = build_model(cfg)
    model.load_canonical(canonical_init(model.config, 0))
    model = model.cuda()
    opt = model.optimizer_class(model, lr=1e-3, weight_decay=0.01, fused=True)
    x = torch.randint(0, cfg.vocab_size, (8, cfg.seq_len), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200000)
    step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak = torch.cuda.max_memory_allocated()
    print(f"held before the step {base / 2**20:.0f} MB, peak in the step {peak / 2**20:.0f} MB")
    events = snap["device_traces"][0]
    live, cur, best, best_i = {}, base, 0, 0
    for i, e in enumerate(events):
        if e["action"] == "alloc":
            cur += e["size"]
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            if e["addr"] in live:
                cur -= live.pop(e["addr"])["size"]
        if cur > best:
            best, best_i = cur, i
    live = {}
    for e in events[: best_i + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)

    def where(e):
        frames = [f for f in e.get("frames", []) if "/models/" in f["filename"] or "/kernels/" in f["filename"]]
        return " <- ".join(f"{os.path.basename(f['filename'])}:{f['line']} {f['name']}" for f in frames[:3]) or "?"

    print(f"peak by replay {best / 2**20:.0f} MB at event {best_i}/{len(events)}: {where(events[best_i])}")
    groups = defaultdict(lambda: [0, 0])
    for e in live.values():
        g = groups[where(e)]
        g[0] += e["size"]
        g[1] += 1
    for k, (size, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:14]:
        print(f"  {size / 2**20:8.1f} MB {n:4d}x  {k}")


main()
