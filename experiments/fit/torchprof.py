"""torch.profiler over a few matmuls: prints its kernel table and a JSON line
with the number of CUDA kernel events it recorded and the matmul's time."""
import json, sys, time
import torch
from torch.profiler import profile, ProfilerActivity

a = torch.randn(4096, 4096, device="cuda")
for _ in range(3):
    a @ a
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(10):
    a @ a
torch.cuda.synchronize()
plain = (time.perf_counter() - t) / 10 * 1e3
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    t = time.perf_counter()
    for _ in range(10):
        a @ a
    torch.cuda.synchronize()
    profiled = (time.perf_counter() - t) / 10 * 1e3
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=6))
kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
print(json.dumps({"kernel_events": len(kernels), "matmul_ms": plain, "matmul_ms_profiled": profiled,
                  "tag": sys.argv[1] if len(sys.argv) > 1 else ""}), flush=True)
