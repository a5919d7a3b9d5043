"""The first training steps of resnet50 (batch 64, bf16 autocast, AdamW):
the first is where PyTorch's caching allocator takes most of its memory and
the libraries load their kernels. Prints one JSON line with the time from
the import of torch to the model on the GPU, each of the first three steps'
times in ms, the bytes PyTorch reserved, and of the first step the
process's user and system CPU time (all threads) and its context switches
(voluntary: it waited; involuntary: it was preempted), to tell a setup's
extra time spent computing from time spent waiting. With CALLTIME naming
calltime.so (loaded as the driver's CUPTI injection), the time inside each
driver call is printed too, for the first step and for steps 2-3."""
import ctypes, json, os, resource, sys, time

t0 = time.perf_counter()
import torch, torchvision

m = torchvision.models.resnet50(weights=None).cuda()
opt = torch.optim.AdamW(m.parameters())
x, y = torch.randn(64, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (64,), device="cuda")
torch.cuda.synchronize()
init = time.perf_counter() - t0
label = sys.argv[1] if len(sys.argv) > 1 else ""
mark = ctypes.CDLL(os.environ["CALLTIME"]).calltime_mark if os.environ.get("CALLTIME") else lambda _: None
mark(("%s: before the first step" % label).encode())
steps, first = [], None
for i in range(3):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    steps.append(round((time.perf_counter() - t) * 1000, 3))
    if i == 0:
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        mark(("%s: first step" % label).encode())
        first = {"user_ms": round((r1.ru_utime - r0.ru_utime) * 1000, 1), "sys_ms": round((r1.ru_stime - r0.ru_stime) * 1000, 1),
                 "voluntary_switches": r1.ru_nvcsw - r0.ru_nvcsw, "involuntary_switches": r1.ru_nivcsw - r0.ru_nivcsw}
mark(("%s: steps 2-3" % label).encode())
print(json.dumps({"label": label, "init_ms": round(init * 1000, 3),
                  "first_step_ms": steps[0], "steps_ms": steps, "first_step_rusage": first,
                  "reserved": torch.cuda.memory_reserved()}), flush=True)
