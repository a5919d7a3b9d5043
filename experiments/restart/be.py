"""The BE job of the restart experiment: resnet50 training at --batch (SGD,
bf16 autocast) on random data, in a closed loop on cuda:0, synchronizing
after each step as a job reading its loss does. It prints "ready" after a
warm-up, then, until --done-file exists or --seconds have passed, one JSON
line a wall-clock second: the second (Unix time) and the images of the
steps that finished in it. A CUDA error ends it with the error printed and
exit status 1."""
import argparse, json, os, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--seconds", type=float, default=120)
ap.add_argument("--done-file", default="")
a = ap.parse_args()

import torch
import torchvision

torch.backends.cudnn.benchmark = True
torch.cuda.set_device(0)
m = torchvision.models.resnet50(weights=None).train().cuda()
x = torch.randn(a.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (a.batch,), device="cuda")
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(m(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()


for _ in range(5):
    step()
print("ready", flush=True)
end = time.time() + a.seconds
sec, n = int(time.time()), 0
try:
    while time.time() < end and not (a.done_file and os.path.exists(a.done_file)):
        step()
        now = time.time()
        while int(now) > sec:  # seconds in which no step finished print 0
            print(json.dumps({"t": sec, "images": n}), flush=True)
            sec, n = sec + 1, 0
        n += a.batch
except Exception as e:
    print(json.dumps({"t": time.time(), "error": repr(e)}), flush=True)
    sys.exit(1)
print(json.dumps({"t": sec, "images": n, "partial": True}), flush=True)
