"""firststep.py's first training step under torch.profiler (CPU and CUDA
activities): prints one JSON line with the step's time and, for each CUDA
runtime or driver call the profiler recorded (cuda*, cu*), its count and
the CPU time spent in it, most first, so that a setup's extra first-step
time can be found in the calls that take it."""
import json, sys, time

import torch, torchvision
from torch.profiler import ProfilerActivity, profile

m = torchvision.models.resnet50(weights=None).cuda()
opt = torch.optim.AdamW(m.parameters())
x, y = torch.randn(64, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (64,), device="cuda")
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    t = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    step = time.perf_counter() - t
calls = [{"name": e.key, "count": e.count, "cpu_us": round(e.cpu_time_total, 1)}
         for e in prof.key_averages() if e.key.startswith("cu")]
calls.sort(key=lambda c: -c["cpu_us"])
print(json.dumps({"label": sys.argv[1] if len(sys.argv) > 1 else "", "first_step_ms": round(step * 1000, 3),
                  "calls": calls[:40]}), flush=True)
