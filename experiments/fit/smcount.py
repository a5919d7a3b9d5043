"""What a framework is told about the SM count, and what it costs or gains.

  python3 smcount.py torch  [--model resnet50] [--replays 500]
  python3 smcount.py jax
  python3 smcount.py cupy
Prints one JSON line: the SM count the framework sees and, for torch and
jax, latencies of a batch-1 model replayed from a CUDA graph / jitted ops.
"""
import json, sys, time, statistics

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]

def torch_run(model_name, replays):
    import torch, torchvision
    torch.backends.cudnn.benchmark = True
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    m = getattr(torchvision.models, model_name)(weights=None).eval().cuda().half()
    x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.half)
    s = torch.cuda.Stream()
    with torch.no_grad():
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(5):
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)
    for _ in range(50):
        g.replay()
    torch.cuda.synchronize()
    ms = []
    for _ in range(replays):
        t = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        ms.append(1e3 * (time.perf_counter() - t))
    return {"framework": "torch", "model": model_name, "sms_seen": sms, "p50_ms": pct(ms, 0.5),
            "p99_ms": pct(ms, 0.99), "mean_ms": statistics.mean(ms), "n": len(ms)}

def jax_run(reps):
    import jax, jax.numpy as jnp
    d = jax.devices()[0]
    out = {"framework": "jax", "sms_seen": getattr(d, "core_count", None)}
    key = jax.random.PRNGKey(0)
    cases = {
        "row_sum_8192x8192": (jax.jit(lambda x: x.sum(axis=1)), jax.random.normal(key, (8192, 8192))),
        "col_sum_8192x8192": (jax.jit(lambda x: x.sum(axis=0)), jax.random.normal(key, (8192, 8192))),
        "softmax_64x4096": (jax.jit(lambda x: jax.nn.softmax(x, axis=-1)), jax.random.normal(key, (64, 4096))),
        "matmul_1x4096x4096": (jax.jit(lambda x: x @ x.T[:, :4096]), jax.random.normal(key, (1, 4096))),
    }
    w = jax.random.normal(key, (4096, 4096))
    cases["gemv_1x4096x4096"] = (jax.jit(lambda x: x @ w), jax.random.normal(key, (1, 4096)))
    del cases["matmul_1x4096x4096"]
    for name, (f, x) in cases.items():
        f(x).block_until_ready()
        ms = []
        for _ in range(reps):
            t = time.perf_counter()
            f(x).block_until_ready()
            ms.append(1e3 * (time.perf_counter() - t))
        out[name] = {"p50_ms": pct(ms, 0.5), "p99_ms": pct(ms, 0.99)}
    return out

def cupy_run():
    import cupy
    return {"framework": "cupy", "sms_seen": cupy.cuda.Device(0).attributes["MultiProcessorCount"]}

if __name__ == "__main__":
    which = sys.argv[1]
    args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    if which == "torch":
        r = torch_run(args.get("--model", "resnet50"), int(args.get("--replays", "500")))
    elif which == "jax":
        r = jax_run(int(args.get("--reps", "200")))
    else:
        r = cupy_run()
    r["tag"] = args.get("--tag", "")
    print(json.dumps(r), flush=True)
