"""A latency-sensitive service for carve bench serve.

Builds a model with random weights at batch 1 (torchvision resnet50,
mobilenet_v3_large or efficientnet_b0, bert-base at sequence 128, or llm: a Llama-shaped causal
LM of about 440M parameters that answers each request by a prefill of
--prompt tokens and a greedy decode of --tokens new ones), in fp16, run
eagerly or replayed from CUDA graphs (llm: a decode loop of our own over
the transformers model's layers, through a static KV cache in our own
tensors, one graph for the prefill and one for a decode step, replayed
--tokens - 1 times, its first tokens checked once against the library's
own generation; eagerly, the library's generation through its dynamic
cache); prints "ready", waits for a line on stdin, then serves requests
arriving open-loop (Poisson at --rate per second; on/off: 100 ms at
twice the rate, 100 ms idle; or step: Poisson at each of --steps times
the rate for an equal part of the time) for --duration seconds, one
at a time in arrival order (each, with --mark, an NVTX range from its
start to its result), and prints one JSON line: each request's
latency from its arrival (queueing included) to its result (llm: its last
token), in ms, each one's arrival (s from the start), the start (s on
CLOCK_MONOTONIC, the clock every process shares: the BE's steps' ends are
on it), and under "info" the model's parameter count and shape (llm from graphs:
and under "check" the check's tokens, ours and the library's, and how many
agree before the first that differs). Then it stays, idle, until its stdin
closes, as a service between requests does: what runs beside it after its
last request (the BE's recovery) runs beside an idle LS, not its exit.
"""
import argparse, json, os, random, sys, time

p = argparse.ArgumentParser()
p.add_argument("--model", default="resnet50")
p.add_argument("--mode", default="graph", choices=["graph", "eager"])
p.add_argument("--rate", type=float, default=400)
p.add_argument("--pattern", default="poisson", choices=["poisson", "onoff", "step"])
p.add_argument("--duration", type=float, default=8)
p.add_argument("--steps", default="", help="--pattern step: the rate's multiple in each phase, comma-separated (bench serve's StepRates)")
p.add_argument("--seed", type=int, default=1)
p.add_argument("--prompt", type=int, default=32, help="llm: prompt tokens per request")
p.add_argument("--tokens", type=int, default=16, help="llm: new tokens per request")
p.add_argument("--mark", default="", help="each request an NVTX range of this name, from its start to its result (carve run --mark)")
a = p.parse_args()
STEPS = [float(x) for x in a.steps.split(",") if x]
TIE = 0.02  # the llm check's gap between two logits, of the largest, taken for a tie
if a.pattern == "step" and not STEPS:
    p.error("--pattern step needs --steps")

import torch

# cuDNN times its candidates (benchmark mode), unless CARVE_SERVE_CUDNN_BENCHMARK=0
torch.backends.cudnn.benchmark = os.environ.get("CARVE_SERVE_CUDNN_BENCHMARK", "1") != "0"
dev = "cuda"


def llm():
    """The decoder and a request's steps. From CUDA graphs: two steps of a
    decode loop of our own over the library model's modules (its
    embedding, norms, projections and MLPs; the rotary embedding, the
    static KV cache in our own tensors and the attention over it ours),
    prefill (the prompt into the cache, the first new token out) and decode
    (one token in, the next out), both reading and writing only fixed
    tensors, the position included, so that graphs can replay them; checked
    once, before capture, against the library's own generation. Eagerly:
    one step, the request decoded by the library with its default (dynamic)
    cache, as a service without graphs runs it."""
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

    def library(n):
        """The prompt's first n greedy tokens (tensors [1, 1]), by the
        library's model step by step through its dynamic cache."""
        out = m(input_ids=prompt, use_cache=True)
        toks = [out.logits[:, -1:].argmax(-1)]
        for _ in range(n - 1):
            out = m(input_ids=toks[-1], past_key_values=out.past_key_values, use_cache=True)
            toks.append(out.logits[:, -1:].argmax(-1))
        return toks

    if a.mode == "eager":
        info["cache"] = "dynamic"
        return [lambda: library(a.tokens)], info

    H, KV = cfg.num_attention_heads, cfg.num_key_value_heads
    D = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    # transformers 5 keeps rope_theta in rope_parameters, 4.x on the config
    rope = getattr(cfg, "rope_parameters", None)
    theta = (rope.get("rope_theta") if isinstance(rope, dict) else None) or getattr(cfg, "rope_theta", None) or 10000.0
    # Llama's rotary embedding (rotate_half form): angle p / theta^(2i/D)
    # for each position p < L, the D/2 frequencies twice over, computed in
    # fp32 and kept in fp16 as the library does; a step gathers its rows
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=dev, dtype=torch.float) / D)
    ang = torch.outer(torch.arange(L, device=dev, dtype=torch.float), inv)
    ang = torch.cat((ang, ang), -1)
    cos, sin = ang.cos().half(), ang.sin().half()
    # the cache, [1, KV heads, L, D] a layer for keys and for values; never
    # reset: a step attends only to positions up to its own, all written by
    # this request, so what an earlier request left beyond them never counts
    kcache = [torch.zeros(1, KV, L, D, device=dev, dtype=torch.half) for _ in m.model.layers]
    vcache = [torch.zeros_like(k) for k in kcache]
    slots = torch.arange(L, device=dev)  # the cache's positions
    ppos = torch.arange(P, device=dev)  # the prompt's positions
    tok = torch.zeros(1, 1, dtype=torch.long, device=dev)  # the last token out, the next one in
    pos = torch.zeros(1, dtype=torch.long, device=dev)  # its place in the cache

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), -1)

    def forward(ids, qpos):
        """The model on ids [1, n] at positions qpos (a device tensor [n]):
        their keys and values into the cache at qpos, each attending to the
        cache up to its own position; the last one's next token, [1, 1]."""
        n = ids.shape[1]
        c, s = cos.index_select(0, qpos), sin.index_select(0, qpos)  # [n, D]
        mask = (slots <= qpos[:, None]).view(1, 1, n, L)
        x = m.model.embed_tokens(ids)  # [1, n, hidden]
        for layer, kc, vc in zip(m.model.layers, kcache, vcache):
            at = layer.self_attn
            h = layer.input_layernorm(x)
            q = at.q_proj(h).view(1, n, H, D).transpose(1, 2)  # [1, H, n, D]
            k = at.k_proj(h).view(1, n, KV, D).transpose(1, 2)
            v = at.v_proj(h).view(1, n, KV, D).transpose(1, 2)
            q, k = q * c + rotate_half(q) * s, k * c + rotate_half(k) * s
            kc.index_copy_(2, qpos, k)
            vc.index_copy_(2, qpos, v)
            kk, vv = kc, vc
            if KV < H:  # grouped-query attention: each KV head serves H / KV query heads
                kk, vv = kc.repeat_interleave(H // KV, 1), vc.repeat_interleave(H // KV, 1)
            o = torch.nn.functional.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
            x = x + at.o_proj(o.transpose(1, 2).reshape(1, n, H * D))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return m.lm_head(m.model.norm(x[:, -1:])).argmax(-1)

    def prefill():
        tok.copy_(forward(prompt, ppos))
        pos.fill_(P)

    def decode():
        tok.copy_(forward(tok, pos))
        pos.add_(1)

    # ours against the library's: fp16 sums in another order (another
    # kernel on fewer SMs) can flip an argmax between near-equal logits,
    # and a token differing feeds the rest different input, so the check
    # counts the tokens that agree before the first that differs, and
    # where the first differs it fails only if the library's logit of our
    # first token is not within TIE of its largest (random weights leave
    # near ties; a wrong layer gives a token far below the top)
    n = min(4, a.tokens)
    prefill()
    ours = [tok.item()]
    for _ in range(n - 1):
        decode()
        ours.append(tok.item())
    lib = [t.item() for t in library(n)]
    agree = next((i for i, (x, y) in enumerate(zip(ours, lib)) if x != y), n)
    info["check"] = {"ours": ours, "library": lib, "match": agree}
    if agree == 0:
        first = m(input_ids=prompt).logits[0, -1].float()
        top = first.max().item()
        gap = top - first[ours[0]].item()
        # fp16 sums of random weights can overflow in some kernels (seen
        # under MPS at 85% of the SMs): NaN logits judge nothing
        finite = bool(torch.isfinite(first).all())
        info["check"]["first_gap"] = gap if finite else "logits not finite"
    if agree == 0 and finite and gap > TIE * max(1.0, abs(top)):
        sys.exit(f"serve_ls: the llm's own decode loop disagrees with the library's generation from the first token "
                 f"(ours {ours}, the library's {lib}; the library's logit of our first token {gap:.3f} below its top, {top:.3f}): its layers, rotary embedding or attention no longer match "
                 f"this transformers' Llama; run --mode eager, which uses the library's own")
    info["cache"] = "static (own)"
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
    elif a.pattern == "step":  # an equal part of the time at each of STEPS times the rate
        part = a.duration / len(STEPS)
        k = min(int(t // part), len(STEPS) - 1)
        nxt = t + rng.expovariate(a.rate * STEPS[k])
        if k < len(STEPS) - 1 and nxt >= (k + 1) * part:  # memoryless: start afresh at the next phase's rate
            t = (k + 1) * part
            continue
        t = nxt
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
    start = time.clock_gettime(time.CLOCK_MONOTONIC)  # t0 on the clock the BE's steps' ends are on
    for at in arrivals:
        wait = at - (time.perf_counter() - t0)
        if wait > 3e-4:
            time.sleep(wait - 2e-4)
        while time.perf_counter() - t0 < at:
            pass
        if a.mark:
            torch.cuda.nvtx.range_push(a.mark)
        infer()
        torch.cuda.current_stream().synchronize()
        if a.mark:
            torch.cuda.nvtx.range_pop()
        lat.append((time.perf_counter() - t0 - at) * 1e3)
print(json.dumps({"latencies_ms": lat, "arrivals_s": arrivals, "start_s": start, "requests": len(arrivals), "info": info}), flush=True)
sys.stdin.read()  # idle until told the run is over
