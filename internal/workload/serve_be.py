"""A best-effort job for carve bench serve.

densenet161 or vit_b_16 inference at --batch (fp16, no grad), resnet50 training at
--batch (SGD, bf16 autocast), or transformer-train: a Llama-shaped decoder of
about 220M parameters trained on --batch sequences of --seq random tokens
(AdamW, bf16 autocast), in a closed loop. Prints "ready" after a warm-up,
waits for a line on stdin, runs for --duration seconds (synchronizing after
each step, as a job reading its loss does), and prints one JSON line: the
items processed (images, or sequences), their unit, the seconds it took,
under "ends_s" the end of each step it ran (s on CLOCK_MONOTONIC, the clock
every process shares: the LS's start is on it), and under "info" the
model's parameter count and shape.

With --marks it runs from that line on until told to stop, and measures
between the next two lines on stdin (the start and the end of the window it
is to be measured over, e.g. an LS's serving beside it): the items of the
steps that finished in the window, and the window's seconds.

With --tail it runs on, after what it measures, until --tail seconds after
a further line on stdin (with --marks, the window's end): e.g. the LS
beside it done, its recovery after it seen in "ends_s".
"""
import argparse, json, sys, threading, time

p = argparse.ArgumentParser()
p.add_argument("--model", default="densenet161", choices=["densenet161", "vit_b_16", "resnet50-train", "transformer-train"])
p.add_argument("--batch", type=int, default=64, help="images, or sequences, per step")
p.add_argument("--seq", type=int, default=256, help="transformer-train: tokens per sequence")
p.add_argument("--duration", type=float, default=8)
p.add_argument("--marks", action="store_true")
p.add_argument("--tail", type=float, default=0)
a = p.parse_args()

import torch

torch.backends.cudnn.benchmark = True
dev = "cuda"
unit, info = "images", {"batch": a.batch}
if a.model in ("densenet161", "vit_b_16"):
    import torchvision
    m = getattr(torchvision.models, a.model)(weights=None).eval().to(dev).half()
    x = torch.randn(a.batch, 3, 224, 224, device=dev, dtype=torch.half)
    info["dtype"] = "fp16"

    def step():
        with torch.no_grad():
            m(x)
elif a.model == "resnet50-train":
    import torchvision
    m = torchvision.models.resnet50(weights=None).train().to(dev)
    x = torch.randn(a.batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    info.update(dtype="bf16 autocast", optimizer="SGD")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
else:
    from transformers import AutoModelForCausalLM, LlamaConfig
    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=12,
                      num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=a.seq)
    with torch.device(dev):
        m = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").train()
    x = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device=dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    unit = "sequences"
    info.update(dtype="bf16 autocast", optimizer="AdamW", layers=cfg.num_hidden_layers, hidden=cfg.hidden_size, seq=a.seq)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
info["params"] = sum(p.numel() for p in m.parameters())

for _ in range(5):
    step()
torch.cuda.synchronize()
ends = []  # each step's end, s on CLOCK_MONOTONIC


def run():
    """One step, synchronized; its end recorded, and returned (perf_counter)."""
    step()
    torch.cuda.synchronize()
    ends.append(time.clock_gettime(time.CLOCK_MONOTONIC))
    return time.perf_counter()


print("ready", flush=True)
sys.stdin.readline()
marks = []  # the lines read after that one, each one's time
want = 2 if a.marks else 1 if a.tail else 0


def read_marks():
    """The lines after "go" (--marks: the window's start and end; --tail: the LS done), each one's time into marks."""
    for _ in range(want):
        sys.stdin.readline()
        marks.append(time.perf_counter())


threading.Thread(target=read_marks, daemon=True).start()
if a.marks:
    n = 0
    while len(marks) < 2:
        done = run()
        if marks and marks[0] <= done and (len(marks) < 2 or done <= marks[1]):
            n += a.batch
    dt = marks[1] - marks[0]
else:
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < a.duration:
        run()
        n += a.batch
    dt = time.perf_counter() - t0
while a.tail and (len(marks) < want or time.perf_counter() - marks[-1] < a.tail):
    run()
print(json.dumps({"items": n, "unit": unit, "seconds": dt, "ends_s": ends, "info": info}), flush=True)
