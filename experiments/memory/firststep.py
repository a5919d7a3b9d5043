"""The first training steps of resnet50 (batch 64, bf16 autocast, AdamW):
the first is where PyTorch's caching allocator takes most of its memory and
the libraries load their kernels. Prints one JSON line with the time from
the import of torch to the model on the GPU, each of the first three steps'
times in ms, and the bytes PyTorch reserved."""
import json, sys, time

t0 = time.perf_counter()
import torch, torchvision

m = torchvision.models.resnet50(weights=None).cuda()
opt = torch.optim.AdamW(m.parameters())
x, y = torch.randn(64, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (64,), device="cuda")
torch.cuda.synchronize()
init = time.perf_counter() - t0
steps = []
for _ in range(3):
    t = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    steps.append(round((time.perf_counter() - t) * 1000, 3))
print(json.dumps({"label": sys.argv[1] if len(sys.argv) > 1 else "", "init_ms": round(init * 1000, 3),
                  "first_step_ms": steps[0], "steps_ms": steps, "reserved": torch.cuda.memory_reserved()}), flush=True)
