"""ResNet-50 inference (random weights, fixed seed) on a fixed batch; saves
the logits so that runs with and without carve can be compared."""
import sys
import torch, torchvision

torch.manual_seed(0)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
m = torchvision.models.resnet50().cuda().eval()
x = torch.randn(16, 3, 224, 224, device="cuda")
with torch.no_grad():
    for _ in range(3):
        y = m(x)
torch.cuda.synchronize()
torch.save(y.cpu(), sys.argv[1])
print("saved", tuple(y.shape))
