"""What a framework sees of the GPU's memory, and a training step under it.
Usage: frameworks.py torch|cupy|jax; prints one JSON line."""
import json, os, sys

fw = sys.argv[1]
out = {"framework": fw}
if fw == "torch":
    import torch, torchvision
    free, total = torch.cuda.mem_get_info()
    out.update(mem_get_info_total=total, mem_get_info_free=free,
               total_memory=torch.cuda.get_device_properties(0).total_memory)
    m = torchvision.models.resnet50(weights=None).cuda()
    opt = torch.optim.AdamW(m.parameters())
    x, y = torch.randn(64, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (64,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward(); opt.step(); torch.cuda.synchronize()
    out.update(step_loss=float(loss), max_allocated=torch.cuda.max_memory_allocated())
elif fw == "cupy":
    import cupy as cp
    free, total = cp.cuda.Device(0).mem_info
    props = cp.cuda.runtime.getDeviceProperties(0)
    out.update(mem_info_total=total, mem_info_free=free, total_global_mem=props["totalGlobalMem"])
    w = cp.random.randn(4096, 4096, dtype=cp.float32) * 0.01
    x = cp.random.randn(1024, 4096, dtype=cp.float32)
    for _ in range(3):  # least squares by gradient steps
        g = x.T @ (x @ w - x) / x.shape[0]
        w -= 0.1 * g
    cp.cuda.Device(0).synchronize()
    out.update(step_ok=bool(cp.isfinite(w).all()))
elif fw == "jax":
    import jax, jax.numpy as jnp
    d = jax.devices()[0]
    st = d.memory_stats() or {}
    out.update(bytes_limit=st.get("bytes_limit"), bytes_reservable_limit=st.get("bytes_reservable_limit"))
    k = jax.random.PRNGKey(0)
    w = jax.random.normal(k, (2048, 2048)) * 0.01
    x = jax.random.normal(k, (512, 2048))
    loss = lambda w: jnp.mean((x @ w - x) ** 2)
    step = jax.jit(lambda w: w - 0.1 * jax.grad(loss)(w))
    w = step(w).block_until_ready()
    out.update(step_loss=float(loss(w)))
print(json.dumps(out), flush=True)
