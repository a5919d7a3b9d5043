"""The data-parallel job of the multi-GPU experiment, one process a GPU
under torchrun (NCCL): resnet50 training at --batch a GPU, bf16 autocast,
SGD, synthetic data. After --warmup steps it makes --ready-file, times
--steps steps, makes --done-file, and rank 0 prints one JSON line: the
mean and p50 step time, and images a second over all GPUs."""
import argparse, json, os, pathlib, time
import torch, torch.distributed as dist, torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--ready-file", default="")
ap.add_argument("--done-file", default="")
ap.add_argument("--label", default="")
a = ap.parse_args()
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)  # first: no context on another GPU
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
world = dist.get_world_size()
m = torchvision.models.resnet50(weights=None).cuda()
m = torch.nn.parallel.DistributedDataParallel(m, device_ids=[local])
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(a.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (a.batch,), device="cuda")
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(m(x), y)
    loss.backward()
    opt.step()


for _ in range(a.warmup):
    step()
torch.cuda.synchronize()
dist.barrier()
if rank == 0 and a.ready_file:
    pathlib.Path(a.ready_file).touch()
times = []
for _ in range(a.steps):
    t = time.perf_counter()
    step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t)
dist.barrier()
if rank == 0:
    if a.done_file:
        pathlib.Path(a.done_file).touch()
    times.sort()
    mean = sum(times) / len(times)
    print(json.dumps({"label": a.label, "world": world, "steps": a.steps, "batch": a.batch,
                      "step_ms_mean": round(mean * 1000, 2), "step_ms_p50": round(times[len(times) // 2] * 1000, 2),
                      "img_per_s": round(world * a.batch / mean, 1)}), flush=True)
dist.destroy_process_group()
