"""A latency-sensitive service for carve bench serve.

Builds a model with random weights at batch 1 (torchvision resnet50 or
mobilenet_v3_large, bert-base at sequence 128, or llm: a Llama-shaped causal
LM of about 440M parameters that answers each request by a prefill of
--prompt tokens and a greedy decode of --tokens new ones), in fp16, run
eagerly or replayed from CUDA graphs (llm: through a static KV cache, one
graph for the prefill and one for a decode step, replayed --tokens - 1
times; eagerly, through the library's dynamic cache); prints "ready",
waits for a line on stdin, then serves requests arriving open-loop (Poisson
at --rate per second, or on/off: 100 ms at twice the rate, 100 ms idle) for
--duration seconds, one at a time in arrival order, and prints one JSON
line: each request's latency from its arrival (queueing included) to its
result (llm: its last token), in ms, and under "info" the model's parameter
count and shape.
"""
import argparse, json, random, sys, time

p = argparse.ArgumentParser()
p.add_argument("--model", default="resnet50")
p.add_argument("--mode", default="graph", choices=["graph", "eager"])
p.add_argument("--rate", type=float, default=400)
p.add_argument("--pattern", default="poisson", choices=["poisson", "onoff"])
p.add_argument("--duration", type=float, default=8)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--prompt", type=int, default=32, help="llm: prompt tokens per request")
p.add_argument("--tokens", type=int, default=16, help="llm: new tokens per request")
a = p.parse_args()

import torch

torch.backends.cudnn.benchmark = True
dev = "cuda"


def llm():
    """The decoder and a request's steps. From CUDA graphs: a static KV
    cache and two steps, prefill (the prompt into the cache, the first new
    token out) and decode (one token in, the next out), both keeping their
    inputs and outputs in fixed tensors so that graphs can replay them.
    Eagerly: one step, the request decoded with the library's default
    (dynamic) cache, as a service without graphs runs it."""
    from transformers import AutoModelForCausalLM, LlamaConfig
    P, L = a.prompt, a.prompt + a.tokens
    # wide and shallow (6 layers of 2048, 440M parameters): each layer is
    # about 40 small kernels at batch 1, so depth sets a token's time
    cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=6,
                      num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=L)
    # cuDNN's attention fails at this shape (torch 2.11, transformers 5.17
    # on an H100: "mha_graph.execute ... is_good()"); the other SDPA kernels
    # serve it
    torch.backends.cuda.enable_cudnn_sdp(False)
    with torch.device(dev):
        m = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").eval().half()
    prompt = torch.randint(0, cfg.vocab_size, (1, P), device=dev)
    info = {"params": sum(x.numel() for x in m.parameters()), "layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size,
            "prompt_tokens": P, "new_tokens": a.tokens, "dtype": "fp16"}
    if a.mode == "eager":
        info["cache"] = "dynamic"

        def request():
            out = m(input_ids=prompt, use_cache=True)
            for _ in range(a.tokens - 1):
                out = m(input_ids=out.logits[:, -1:].argmax(-1), past_key_values=out.past_key_values, use_cache=True)

        return [request], info
    from transformers import StaticCache
    kv = None
    for kw in (dict(max_batch_size=1, max_cache_len=L, device=dev, dtype=torch.half),  # up to transformers 4.5x
               dict(batch_size=1, max_cache_len=L, device=dev, dtype=torch.half),
               dict(max_cache_len=L)):  # later: laid out at the first update
        try:
            kv = StaticCache(cfg, **kw)
            break
        except TypeError:
            continue
    if kv is None:
        sys.exit("serve_ls: this transformers' StaticCache takes none of the known argument sets")
    ppos = torch.arange(P, device=dev)
    tok = torch.zeros(1, 1, dtype=torch.long, device=dev)  # the last token out, the next one in
    pos = torch.zeros(1, dtype=torch.long, device=dev)  # its place in the cache

    def prefill():
        out = m(input_ids=prompt, position_ids=ppos.view(1, -1), cache_position=ppos, past_key_values=kv, use_cache=True)
        tok.copy_(out.logits[:, -1:].argmax(-1))
        pos.fill_(P)

    def decode():
        out = m(input_ids=tok, position_ids=pos.view(1, 1), cache_position=pos, past_key_values=kv, use_cache=True)
        tok.copy_(out.logits[:, -1:].argmax(-1))
        pos.add_(1)

    info["cache"] = "static"
    return [prefill] + [decode] * (a.tokens - 1), info


def capture(fn, pool=None):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, pool=pool):
        fn()
    return g


with torch.no_grad():
    if a.model == "llm":
        steps, info = llm()
    else:
        if a.model == "bert":
            from transformers import BertConfig, BertModel
            m = BertModel(BertConfig()).eval().to(dev).half()
            x = torch.randint(0, 30000, (1, 128), device=dev)
            run = lambda: m(input_ids=x).last_hidden_state
        else:
            import torchvision
            m = getattr(torchvision.models, a.model)(weights=None).eval().to(dev).half()
            x = torch.randn(1, 3, 224, 224, device=dev, dtype=torch.half)
            run = lambda: m(x)
        steps = [run]
        info = {"params": sum(p.numel() for p in m.parameters()), "dtype": "fp16"}
    info["mode"] = a.mode
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(10 if len(steps) == 1 else 3):
            for f in steps:
                f()
    torch.cuda.current_stream().wait_stream(s)
    if a.mode == "graph":
        graphs = {}  # one per step function: a decode step is one graph replayed
        for f in steps:
            if f not in graphs:
                graphs[f] = capture(f, next(iter(graphs.values())).pool() if graphs else None)
        replays = [graphs[f].replay for f in steps]
    else:
        replays = steps

    def infer():
        for f in replays:
            f()

    for _ in range(20 if len(steps) == 1 else 5):
        infer()
    torch.cuda.synchronize()

rng = random.Random(a.seed)
arrivals, t = [], 0.0
while a.rate > 0:
    if a.pattern == "poisson":
        t += rng.expovariate(a.rate)
    else:  # on/off: 100 ms at twice the rate, 100 ms without requests
        t += rng.expovariate(2 * a.rate)
        if t % 0.2 >= 0.1:
            t += 0.2 - t % 0.2
    if t >= a.duration:
        break
    arrivals.append(t)

print("ready", flush=True)
sys.stdin.readline()
if not arrivals:  # an LS tenant that gets no request, beside the BE
    time.sleep(a.duration)
lat = []
with torch.no_grad():
    t0 = time.perf_counter()
    for at in arrivals:
        wait = at - (time.perf_counter() - t0)
        if wait > 3e-4:
            time.sleep(wait - 2e-4)
        while time.perf_counter() - t0 < at:
            pass
        infer()
        torch.cuda.current_stream().synchronize()
        lat.append((time.perf_counter() - t0 - at) * 1e3)
print(json.dumps({"latencies_ms": lat, "requests": len(arrivals), "info": info}), flush=True)
