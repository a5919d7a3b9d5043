"""A tenant that takes GPU memory in --block MiB blocks (torch.empty) until
an allocation fails, then holds what it has for --hold seconds and prints
one JSON line: how much it held when it failed and the error. With
--mem-info, first prints what PyTorch is told of the GPU's memory."""
import argparse, json, time
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--block", type=int, default=256)
ap.add_argument("--hold", type=float, default=0)
ap.add_argument("--label", default="")
a = ap.parse_args()
torch.cuda.init()
free, total = torch.cuda.mem_get_info()
held, err = [], None
while True:
    try:
        held.append(torch.empty(a.block << 20, dtype=torch.uint8, device="cuda"))
    except RuntimeError as e:  # torch.OutOfMemoryError is one
        err = str(e).splitlines()[0][:200]
        break
print(json.dumps({"label": a.label, "held_mib": len(held) * a.block, "reported_total_mib": total >> 20,
                  "reported_free_mib": free >> 20, "error": err}), flush=True)
time.sleep(a.hold)
