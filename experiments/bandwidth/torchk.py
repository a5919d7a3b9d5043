"""The PyTorch kernels of the bandwidth study: a resnet50 training step
(batch 32, AMP fp16) or vit_b_16 inference (batch 64, fp16), random
weights. With a tag it profiles STEPS steps with torch.profiler and prints
one JSON line: each kernel name's count and total GPU time. With "ncu" it
only runs steps (Nsight Compute, outside, picks the kernels it measures).
Usage: torchk.py resnet|vit TAG|ncu [STEPS]"""
import json, sys
import torch, torchvision
from torch.profiler import profile, ProfilerActivity

model_name, tag = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
torch.backends.cudnn.benchmark = False
if model_name == "resnet":
    m = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
else:
    m = torchvision.models.vit_b_16().cuda().half().eval()
    x = torch.randn(64, 3, 224, 224, device="cuda").half()

    def step():
        with torch.no_grad():
            m(x)

for _ in range(3):
    step()
torch.cuda.synchronize()
if tag == "ncu":
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    sys.exit(0)
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
kernels = {}
for e in prof.events():
    if e.device_type != torch.autograd.DeviceType.CUDA:
        continue
    k = kernels.setdefault(e.name, [0, 0.0])
    k[0] += 1
    k[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
print(json.dumps({"model": model_name, "tag": tag, "steps": steps,
                  "kernels": {n: {"count": c, "us": t} for n, (c, t) in kernels.items()}}), flush=True)
