"""An LS tenant's start: a resnet18 (random weights, fp16, batch 1) warmed
up on a side stream, captured with torch.cuda.graph, replayed, and its
output compared with the eager one. Prints "ok", or raises."""
import torch
import torchvision

torch.manual_seed(0)
m = torchvision.models.resnet18().cuda().half().eval()
x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.half)
with torch.no_grad():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            eager = m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = m(x)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    eager = m(x)
    torch.cuda.synchronize()
assert torch.allclose(y.float(), eager.float(), rtol=1e-2, atol=1e-2), (y - eager).abs().max().item()
print("ok")
