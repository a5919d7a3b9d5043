"""Does a CUDA graph replay take a partition changed after its capture?
Times replays of a captured matmul, moves its own process to 8 TPCs with
carve set, times them again. Prints one JSON line."""
import json, os, subprocess, sys, time
import torch

a = torch.randn(4096, 4096, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        a @ a
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    b = a @ a

def t():
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / 10 * 1e3

before = t()
out = subprocess.run([sys.argv[1], "set", "-p", str(os.getpid()), "-n", "8"], capture_output=True, text=True)
after = t()
print(json.dumps({"replay_ms_before": before, "replay_ms_after_set_8_tpcs": after, "set": out.stdout.strip() or out.stderr.strip()}))
