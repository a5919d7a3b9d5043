"""The first training step of resnet50 (batch 64, bf16 autocast, AdamW),
where PyTorch's caching allocator takes most of its memory: prints one JSON
line with the step's time in ms and the bytes PyTorch reserved."""
import json, sys, time
import torch, torchvision

m = torchvision.models.resnet50(weights=None).cuda()
opt = torch.optim.AdamW(m.parameters())
x, y = torch.randn(64, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (64,), device="cuda")
torch.cuda.synchronize()
t = time.perf_counter()
with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = torch.nn.functional.cross_entropy(m(x), y)
loss.backward()
opt.step()
torch.cuda.synchronize()
print(json.dumps({"label": sys.argv[1] if len(sys.argv) > 1 else "", "first_step_ms": round((time.perf_counter() - t) * 1000, 3),
                  "reserved": torch.cuda.memory_reserved()}), flush=True)
