#!/usr/bin/env python3
"""step: deterministic training steps whose results can be compared bit for
bit between runs (issue 22: the same steps with kernel launches sliced into
pieces, by carve run --be --slice in tide.sh's part bits, must give the same
bits as without).

Two models, random weights and data from fixed seeds: resnet50 (torchvision)
under bf16 autocast and a small transformer encoder stack, both trained with
AdamW, batch 32. cuDNN and PyTorch are held to deterministic algorithms
(benchmark off, cuBLAS workspace config set before CUDA starts, attention by
the math kernels: the fused ones' backward is not deterministic; resnet's
adaptive average pool and cross entropy's nll_loss, whose CUDA kernels
PyTorch flags as nondeterministic, are replaced by the same arithmetic in
plain ops). STEPS steps (default 3): a function's first
launch is never sliced, so steps after the first are where slicing shows.

Prints one JSON line: sha256 of each step's losses, of every gradient and of
every parameter after the last step (one hash over all, in order, and the
first differing names are findable from "per_tensor" with STEP_PER_TENSOR=1),
the losses, and the time of each step.
Usage: step.py [--steps N]   (environment: STEPS, STEP_PER_TENSOR=1)
"""
import argparse
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts

BATCH = 32
SEQ, DMODEL, HEADS, LAYERS = 64, 256, 8, 2


def sha(t):
    """sha256 of a tensor's bytes (as stored: dtype and values)"""
    import torch
    b = t.detach().contiguous().cpu()
    if b.dtype == torch.bfloat16:
        b = b.view(torch.int16)
    return hashlib.sha256(b.numpy().tobytes()).hexdigest()


def digest(named):
    """one sha256 over (name, tensor hash) pairs in order, and the pairs"""
    h = hashlib.sha256()
    pairs = []
    for name, t in named:
        s = sha(t) if t is not None else "none"
        h.update(name.encode() + b"\0" + s.encode() + b"\n")
        pairs.append([name, s])
    return h.hexdigest(), pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "3")))
    args = ap.parse_args()

    import torch
    import torch.nn as nn
    import torchvision

    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # warn_only: an op PyTorch flags would otherwise end the run with no
    # result; the plain runs twice show whether the step is deterministic
    torch.use_deterministic_algorithms(True, warn_only=True)
    for off in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
        if hasattr(torch.backends.cuda, off):
            getattr(torch.backends.cuda, off)(False)
    torch.backends.cuda.enable_math_sdp(True)
    dev = torch.device("cuda")

    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3), keepdim=True)

    resnet = torchvision.models.resnet50(weights=None)
    resnet.avgpool = Mean()
    resnet = resnet.to(dev)
    layer = nn.TransformerEncoderLayer(DMODEL, HEADS, dim_feedforward=4 * DMODEL, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False).to(dev)
    params = list(resnet.parameters()) + list(encoder.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

    g = torch.Generator().manual_seed(1)
    images = torch.randn(BATCH, 3, 224, 224, generator=g).to(dev)
    labels = torch.randint(0, 1000, (BATCH,), generator=g)
    onehot = torch.zeros(BATCH, 1000)
    onehot[torch.arange(BATCH), labels] = 1.0
    onehot = onehot.to(dev)
    seq = torch.randn(BATCH, SEQ, DMODEL, generator=g).to(dev)
    target = torch.randn(BATCH, SEQ, DMODEL, generator=g).to(dev)

    losses, times = [], []
    for _ in range(args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = resnet(images)
            out = encoder(seq)
        # cross entropy written out: nll_loss's CUDA kernels are flagged nondeterministic
        xent = -(logits.float().log_softmax(dim=1) * onehot).sum(dim=1).mean()
        loss = xent + nn.functional.mse_loss(out.float(), target)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.detach().clone())

    named = list(resnet.named_parameters(prefix="resnet")) + list(encoder.named_parameters(prefix="encoder"))
    grads, grad_pairs = digest((n, p.grad) for n, p in named)
    weights, weight_pairs = digest((n, p) for n, p in named)
    res = {
        "steps": args.steps,
        "loss_sha256": [sha(l) for l in losses],
        "loss": [float(l) for l in losses],
        "grads_sha256": grads,
        "params_sha256": weights,
        "tensors": len(named),
        "step_s": [round(t, 4) for t in times],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(0),
    }
    if os.environ.get("STEP_PER_TENSOR") == "1":
        res["per_tensor"] = {"grads": grad_pairs, "params": weight_pairs}
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    sys.exit(main())
