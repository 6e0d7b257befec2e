#!/usr/bin/env python3
"""Measures what tagcsim predicts, on one GPU, with PyTorch itself: FSDP2 training steps of
Llama-shaped models and the SDPA attention kernels, for `tagcsim validate` and the device profiles.

    python3 calibrate/torch-fsdp-step.py OUTDIR [BUDGET_SECONDS] [--compile | --profile | --sustained | --gemms | --memory-pressure | --without-fsdp]

Writes OUTDIR/torch-fsdp-step.json (with --compile: torch-fsdp-step-compile.json, the blocks
compiled one by one before fully_shard as torchtitan does, the loss eager; no attention sweep) and
prints one line per measurement. --profile counts, per configuration, the CUDA kernels one
eager step launches and its CPU time (torch.profiler; torch-fsdp-step-profile.json): what the
simulator's host stream is checked against; with the kernels that took the most time (the
attention backend SDPA chose) and the allocated peak of each phase of the step (forward, loss,
backward, clipping, optimizer). --sustained runs one large configuration for most of
the budget while nvidia-smi samples clocks, power and temperature every second
(torch-fsdp-step-sustained.json): whether the step slows down once the GPU is hot. --gemms times
F.linear and torch._scaled_mm at the shapes `tagcsim calibrate box` timed with cuBLAS
(torch-fsdp-step-gemms.json), to compare with `tagcsim validate --kernels-against`, and
torch._grouped_mm at five mixtures of experts' shapes (its "grouped_gemms"). --without-fsdp times
each configuration with bf16 parameters twice, under fully_shard on a world of one GPU and as a
plain module (torch-fsdp-step-without-fsdp.json): what FSDP's own machinery costs on one GPU, where
published one-GPU runs without FSDP ran about 10% faster a GPU than the same runs on two
(docs/validation.md, "One GPU against two"). --memory-pressure
runs one configuration under a shrinking cap on the caching allocator
(torch.cuda.set_per_process_memory_fraction), from its unconstrained reserved peak down toward its
allocated peak, and records the step time and the allocator's retries (free the cache, synchronize,
allocate again) per step (torch-fsdp-step-memory-pressure.json): what a run whose memory is nearly
full pays, which tagcsim does not model yet (docs/validation.md, "Memory pressure"). Not run in
CI: it needs a GPU and PyTorch, neither of which the simulator needs.

The step is the one tagcsim's `framework: torchtitan` scenarios describe, written here from that
description (docs/fsdp-semantics.md), not copied from torchtitan: fully_shard on the token
embedding, on each block and on [norm, output], bf16 parameters and fp32 gradient reduction,
eager mode, torch.optim.AdamW (foreach) after clip_grad_norm_(1.0), loss as F.cross_entropy over
the logits cast to fp32. RoPE is applied as real arithmetic on (cos, sin); SDPA picks its own
kernel as torchtitan's default does. One GPU: FSDP2 still all-gathers and reduce-scatters (over a
group of one), so its copies, casts and hooks are in the time. Each configuration is run in a
fresh model; the step time is the median of the timed steps after warm-up, wall clock between
torch.cuda.synchronize() calls.
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
# beside this script: python puts its folder on sys.path
from torch_kernel_sweeps import attention_sweep, gemm_sweep, grouped_gemm_sweep, scatter_add_sweep

# (name, layers, hidden, heads, kv_heads, ffn, vocab, seq, micro_batch, activation_checkpointing)
# The shapes are Llama 3's where they can be (hidden 4096, 32/8 heads, ffn 14336, vocab 128256)
# with fewer layers so that a whole unsharded model and its AdamW state fit one GPU; the small
# ones are where the host thread, not the GPU, sets the pace.
CONFIGS = [
    ("llama-small-12l-768", 12, 768, 12, 12, 2048, 32000, 2048, 4, "none"),
    ("llama3-1b-shape-16l", 16, 2048, 32, 8, 8192, 128256, 4096, 2, "none"),
    ("llama3-8b-shape-8l-s2048", 8, 4096, 32, 8, 14336, 128256, 2048, 4, "none"),
    ("llama3-8b-shape-8l-s8192", 8, 4096, 32, 8, 14336, 128256, 8192, 1, "none"),
    ("llama3-8b-shape-8l-s8192-full-ac", 8, 4096, 32, 8, 14336, 128256, 8192, 2, "full"),
    ("llama3-8b-shape-8l-s16384", 8, 4096, 32, 8, 14336, 128256, 16384, 1, "none"),
]
COMPILE_CONFIGS = [CONFIGS[0], CONFIGS[1], CONFIGS[3]]
WARMUP, TIMED = 3, 6


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).type_as(x) * self.weight


def rope(x, cos, sin):
    # x: (b, s, h, d); rotate pairs (even, odd) as Llama's complex multiply does.
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        self.attention_norm, self.ffn_norm = RMSNorm(hidden), RMSNorm(hidden)
        self.wq = nn.Linear(hidden, heads * self.hd, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(heads * self.hd, hidden, bias=False)
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q = rope(self.wq(h).view(b, s, self.heads, self.hd), cos, sin)
        k = rope(self.wk(h).view(b, s, self.kv_heads, self.hd), cos, sin)
        v = self.wv(h).view(b, s, self.kv_heads, self.hd)
        rep = self.heads // self.kv_heads
        if rep > 1:  # repeat_kv, as Llama's reference code does before SDPA
            k = k[:, :, :, None, :].expand(b, s, self.kv_heads, rep, self.hd).reshape(b, s, self.heads, self.hd)
            v = v[:, :, :, None, :].expand(b, s, self.kv_heads, rep, self.hd).reshape(b, s, self.heads, self.hd)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Model(nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, vocab, seq, ac):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(Block(hidden, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.output = nn.Linear(hidden, vocab, bias=False)
        self.ac = ac
        hd = hidden // heads
        inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(seq).float(), inv)
        self.register_buffer("cos", ang.cos()[None, :, None, :], persistent=False)
        self.register_buffer("sin", ang.sin()[None, :, None, :], persistent=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for layer in self.layers:
            if self.ac == "full":
                x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, use_reentrant=False)
            else:
                x = layer(x, cos, sin)
        return self.output(self.norm(x))


def parameter_count(m):
    return sum(p.numel() for p in m.parameters())


def one_step(model, opt, inputs, labels, mark=lambda phase: None):
    logits = model(inputs)
    mark("forward")
    loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))
    del logits
    mark("loss")
    loss.backward()
    mark("backward")
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
    mark("clip")
    opt.step()
    mark("optimizer")
    opt.zero_grad()


def phase_peaks(model, opt, inputs, labels):
    # Where in the step the allocated memory peaks, and how high: the eager 8-layer Llama 3 shape
    # at 8192 tokens peaked 10 GiB higher as one sequence of 8192 than as four of 2048, which the
    # simulator's memory walk does not reproduce (docs/validation.md, "Memory itself").
    peaks = {}

    def mark(phase):
        torch.cuda.synchronize()
        peaks[phase] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    one_step(model, opt, inputs, labels, mark)
    return peaks


def build(cfg, compile_blocks=False):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    name, layers, hidden, heads, kv_heads, ffn, vocab, seq, mb, ac = cfg
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Model(layers, hidden, heads, kv_heads, ffn, vocab, seq, ac)
    if compile_blocks:
        for i, layer in enumerate(model.layers):
            model.layers[i] = torch.compile(layer, fullgraph=True)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fully_shard(model.tok_embeddings, mp_policy=mp)
    for i, layer in enumerate(model.layers):
        # torchtitan leaves the last block unresharded: the backward needs it at once.
        fully_shard(layer, mp_policy=mp, reshard_after_forward=i < layers - 1)
    fully_shard([model.norm, model.output], mp_policy=mp, reshard_after_forward=False)
    fully_shard(model, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, foreach=True)
    tokens = torch.randint(0, vocab, (mb, seq + 1), device="cuda")
    return model, opt, tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def build_bf16(cfg, sharded):
    """The model cast to bf16 whole (model.to(torch.bfloat16), AdamW over the bf16 parameters, as
    KempnerForge and VectorLM run it), under fully_shard on a world of one or as a plain module."""
    from torch.distributed.fsdp import fully_shard

    name, layers, hidden, heads, kv_heads, ffn, vocab, seq, mb, ac = cfg
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Model(layers, hidden, heads, kv_heads, ffn, vocab, seq, ac).to(torch.bfloat16)
    if sharded:
        fully_shard(model.tok_embeddings)
        for i, layer in enumerate(model.layers):
            fully_shard(layer, reshard_after_forward=i < layers - 1)
        fully_shard([model.norm, model.output], reshard_after_forward=False)
        fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, foreach=True)
    tokens = torch.randint(0, vocab, (mb, seq + 1), device="cuda")
    return model, opt, tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def both_ways(cfg):
    # The two builds alternate, step by step, so that the GPU's clocks drift alike for both; both
    # are freed when this returns.
    built = {k: build_bf16(cfg, k == "fully_shard") for k in ("fully_shard", "plain")}
    times = {k: [] for k in built}
    for step in range(WARMUP + TIMED):
        for k, (model, opt, inputs, labels) in built.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            one_step(model, opt, inputs, labels)
            torch.cuda.synchronize()
            if step >= WARMUP:
                times[k].append(time.perf_counter() - t0)
    return times


def without_fsdp(deadline):
    rows = []
    for cfg in CONFIGS:
        if time.monotonic() > deadline - 20:
            rows.append({"name": cfg[0], "error": "skipped, out of budget"})
            continue
        try:
            row = {"name": cfg[0], "micro_batch": cfg[8], "seq_len": cfg[7]}
            for k, t in both_ways(cfg).items():
                row[k + "_step_seconds"] = statistics.median(t)
                row[k + "_step_seconds_all"] = t
            row["fully_shard_over_plain"] = row["fully_shard_step_seconds"] / row["plain_step_seconds"]
        except Exception as e:  # out of memory (two models at once): recorded, and the next one runs
            row = {"name": cfg[0], "error": type(e).__name__ + ": " + (str(e).splitlines() or [""])[0][:200]}
        torch.cuda.empty_cache()
        rows.append(row)
        print(f"without-fsdp {row['name']}: " + (f"fully_shard {row['fully_shard_step_seconds']:.4f} s, plain "
              f"{row['plain_step_seconds']:.4f} s, ratio {row['fully_shard_over_plain']:.3f}"
              if "fully_shard_over_plain" in row else row["error"]), flush=True)
    return rows


def profile_kernels(cfg):
    from torch.profiler import ProfilerActivity, profile

    model, opt, inputs, labels = build(cfg)
    for _ in range(WARMUP):
        one_step(model, opt, inputs, labels)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        one_step(model, opt, inputs, labels)
        cpu = time.perf_counter() - t0
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    events = prof.events()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    launches = [e for e in events if e.name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")]
    gpu_busy = sum(e.time_range.elapsed_us() for e in kernels) / 1e6
    by_name = {}
    for e in kernels:
        count_seconds = by_name.setdefault(e.name, [0, 0.0])
        count_seconds[0] += 1
        count_seconds[1] += e.time_range.elapsed_us() / 1e6
    top = sorted(by_name.items(), key=lambda item: -item[1][1])[:30]
    out = {"name": cfg[0], "kernels": len(kernels), "launch_calls": len(launches),
           "cpu_seconds_until_step_returns": cpu, "wall_seconds_profiled": wall, "gpu_kernel_seconds": gpu_busy,
           "top_kernels": [{"name": n[:200], "count": c, "seconds": t} for n, (c, t) in top],
           "peak_allocated_GiB_by_phase": phase_peaks(model, opt, inputs, labels),
           "note": "one eager step under torch.profiler (its own overhead inflates the CPU time); kernels counted on "
                   "the device; top_kernels by their time (which SDPA backend ran shows here); "
                   "peak_allocated_GiB_by_phase from one more step, the peak reset at each phase's start"}
    del model, opt
    torch.cuda.empty_cache()
    return out


def sustained(cfg, seconds, out_dir):
    import subprocess

    log = os.path.join(out_dir, "nvidia-smi-sustained.csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active",
                            "--format=csv,noheader", "-l", "1"], stdout=open(log, "w"), stderr=subprocess.DEVNULL)
    model, opt, inputs, labels = build(cfg)
    t_start, steps = time.monotonic(), []
    while time.monotonic() - t_start < seconds:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        one_step(model, opt, inputs, labels)
        torch.cuda.synchronize()
        steps.append([round(time.monotonic() - t_start, 3), time.perf_counter() - t0])
    smi.terminate()
    smi.wait()
    del model, opt
    torch.cuda.empty_cache()
    samples = [l.strip() for l in open(log) if l.strip()]
    return {"name": cfg[0], "seconds": seconds, "steps": steps, "nvidia_smi": samples,
            "nvidia_smi_fields": "timestamp, clocks.sm, clocks.mem, power.draw, temperature.gpu, clocks_throttle_reasons.active"}


def allocator_counts():
    st = torch.cuda.memory_stats()
    return {k: st.get(k, 0) for k in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
                                      "num_sync_all_streams")}


def timed_steps(model, opt, inputs, labels, warmup, timed):
    for _ in range(warmup):
        one_step(model, opt, inputs, labels)
    torch.cuda.synchronize()
    before, times = allocator_counts(), []
    for _ in range(timed):
        t0 = time.perf_counter()
        one_step(model, opt, inputs, labels)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    after = allocator_counts()
    return times, {k: (after[k] - before[k]) / timed for k in after}


def memory_pressure(cfg, deadline):
    # The cap is the caching allocator's limit: past it, an allocation that no cached block serves
    # makes the allocator give its unused cached blocks back (a device synchronize and cudaFree
    # each) and try again, counted in num_alloc_retries; OOM when that fails too.
    total = torch.cuda.get_device_properties(0).total_memory
    model, opt, inputs, labels = build(cfg)
    torch.cuda.reset_peak_memory_stats()
    times, per_step = timed_steps(model, opt, inputs, labels, WARMUP, TIMED)
    allocated, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    rows = [{"cap_GiB": None, "step_seconds": statistics.median(times), "step_seconds_all": times,
             "per_step": per_step, "max_memory_allocated_GiB": allocated / 2**30,
             "max_memory_reserved_GiB": reserved / 2**30}]
    print(f"memory {cfg[0]}: no cap: {rows[0]['step_seconds']:.4f} s, allocated {allocated / 2**30:.2f} GiB, "
          f"reserved {reserved / 2**30:.2f} GiB", flush=True)
    gap = reserved - allocated
    caps = [allocated + f * gap for f in (1.0, 0.75, 0.5, 0.3, 0.2, 0.1, 0.05)] + [allocated * 1.01, allocated * 1.003]
    for cap in sorted(set(int(c) for c in caps), reverse=True):
        if time.monotonic() > deadline - 15:
            break
        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total), 0)
        torch.cuda.reset_peak_memory_stats()
        row = {"cap_GiB": cap / 2**30, "cap_over_allocated_peak": cap / allocated}
        try:
            times, per_step = timed_steps(model, opt, inputs, labels, 2, 5)
            row.update({"step_seconds": statistics.median(times), "step_seconds_all": times, "per_step": per_step,
                        "max_memory_allocated_GiB": torch.cuda.max_memory_allocated() / 2**30,
                        "max_memory_reserved_GiB": torch.cuda.max_memory_reserved() / 2**30})
            print(f"memory {cfg[0]}: cap {cap / 2**30:.2f} GiB ({cap / allocated:.3f} x allocated): "
                  f"{row['step_seconds']:.4f} s, {per_step['num_alloc_retries']:.1f} retries and "
                  f"{per_step['num_device_free']:.1f} cudaFree per step", flush=True)
        except torch.cuda.OutOfMemoryError as e:
            row["error"] = "OutOfMemoryError: " + (str(e).splitlines() or [""])[0][:160]
            print(f"memory {cfg[0]}: cap {cap / 2**30:.2f} GiB: out of memory", flush=True)
            rows.append(row)
            break
        rows.append(row)
    torch.cuda.set_per_process_memory_fraction(1.0, 0)
    del model, opt
    torch.cuda.empty_cache()
    return {"name": cfg[0], "device_memory_GiB": total / 2**30, "caps": rows,
            "note": "per_step: the allocator's counters (memory_stats) over the timed steps, divided by their number"}


def train_steps(cfg, deadline, compile_blocks):
    name, layers, hidden, heads, kv_heads, ffn, vocab, seq, mb, ac = cfg
    torch.cuda.reset_peak_memory_stats()
    model, opt, inputs, labels = build(cfg, compile_blocks)
    params = parameter_count(model)
    times = []
    for step in range(WARMUP + TIMED):
        if time.monotonic() > deadline:
            break
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        one_step(model, opt, inputs, labels)
        torch.cuda.synchronize()
        if step >= WARMUP:
            times.append(time.perf_counter() - t0)
    out = {
        "name": name, "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "ffn": ffn,
        "vocab": vocab, "seq_len": seq, "micro_batch": mb, "activation_checkpointing": ac, "compile": compile_blocks,
        "parameters": params, "steps_timed": len(times),
        "step_seconds": statistics.median(times) if times else None,
        "step_seconds_all": times,
        "tokens_per_second": mb * seq / statistics.median(times) if times else None,
        "max_memory_allocated_GiB": torch.cuda.max_memory_allocated() / 2**30,
        "max_memory_reserved_GiB": torch.cuda.max_memory_reserved() / 2**30,
    }
    del model, opt
    torch.cuda.empty_cache()
    return out


def main():
    modes = {"--compile", "--profile", "--sustained", "--gemms", "--memory-pressure", "--without-fsdp"}
    args = [a for a in sys.argv[1:] if a not in modes]
    mode = next((a for a in sys.argv[1:] if a in modes), "")
    compile_blocks = mode == "--compile"
    out_dir = args[0] if args else "."
    budget = float(args[1]) if len(args) > 1 else 240.0
    deadline = time.monotonic() + budget
    os.makedirs(out_dir, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.distributed.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    torch.cuda.set_device(0)
    p = torch.cuda.get_device_properties(0)
    result = {
        "format": "tagcsim-torch-measurements/1",
        "command": "python3 calibrate/torch-fsdp-step.py OUTDIR " + str(int(budget)) + (" " + mode if mode else ""),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": p.name, "sms": p.multi_processor_count, "memory_GiB": p.total_memory / 2**30,
        "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "steps": [], "attention": [],
    }
    path = os.path.join(out_dir, "torch-fsdp-step" + (mode.replace("--", "-") if mode else "") + ".json")

    def save():
        with open(path, "w") as f:
            json.dump(result, f, indent=1)

    if mode == "--memory-pressure":
        result["memory_pressure"] = memory_pressure(CONFIGS[3], deadline)
        save()
        torch.distributed.destroy_process_group()
        print(f"wrote {path}", flush=True)
        return
    if mode == "--without-fsdp":
        result["without_fsdp"] = without_fsdp(deadline)
        save()
        torch.distributed.destroy_process_group()
        print(f"wrote {path}", flush=True)
        return
    if mode == "--gemms":
        result["gemms"] = gemm_sweep(deadline - 20)
        result["grouped_gemms"] = grouped_gemm_sweep(deadline - 10)
        result["scatter_add"] = scatter_add_sweep(deadline - 5)
        save()
        torch.distributed.destroy_process_group()
        print(f"wrote {path}", flush=True)
        return
    if mode in ("--profile", "--sustained"):
        if mode == "--profile":
            result["profile"] = []
            for cfg in CONFIGS:
                if time.monotonic() > deadline - 20:
                    break
                row = profile_kernels(cfg)
                result["profile"].append(row)
                print(f"profile {row['name']}: {row['kernels']} kernels, {row['launch_calls']} launch calls, CPU "
                      f"{row['cpu_seconds_until_step_returns'] * 1e3:.1f} ms, wall {row['wall_seconds_profiled'] * 1e3:.1f} ms, "
                      f"GPU busy {row['gpu_kernel_seconds'] * 1e3:.1f} ms", flush=True)
                save()
        else:
            result["sustained"] = sustained(CONFIGS[3], max(10.0, deadline - time.monotonic() - 15), out_dir)
            st = [t for _, t in result["sustained"]["steps"]]
            print(f"sustained {CONFIGS[3][0]}: {len(st)} steps, first 5 median {statistics.median(st[:5]):.4f} s, "
                  f"last 5 median {statistics.median(st[-5:]):.4f} s", flush=True)
            for l in result["sustained"]["nvidia_smi"][::10]:
                print("  nvidia-smi:", l, flush=True)
        save()
        torch.distributed.destroy_process_group()
        print(f"wrote {path}", flush=True)
        return
    for cfg in COMPILE_CONFIGS if compile_blocks else CONFIGS:
        if time.monotonic() > deadline - 30:
            print(f"step {cfg[0]}: skipped, out of budget", flush=True)
            continue
        try:
            row = train_steps(cfg, deadline, compile_blocks)
        except Exception as e:  # out of memory, a compile failure: recorded, and the next one runs
            row = {"name": cfg[0], "error": type(e).__name__ + ": " + (str(e).splitlines() or [""])[0][:200]}
            torch.cuda.empty_cache()
        result["steps"].append(row)
        print(f"step {row['name']}: " + (f"{row['step_seconds']:.4f} s, {row['tokens_per_second']:.0f} tokens/s, "
              f"{row['parameters'] / 1e9:.3f} B params, reserved {row['max_memory_reserved_GiB']:.2f} GiB"
              if row.get("step_seconds") else row.get("error", "no step timed")), flush=True)
        save()
    if not compile_blocks:
        result["attention"] = attention_sweep(deadline)
        save()
    torch.distributed.destroy_process_group()
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
