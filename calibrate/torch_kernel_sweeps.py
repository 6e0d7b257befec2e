"""Kernel-by-kernel sweeps on the lent GPU, as PyTorch runs the kernels in training, for
torch-fsdp-step.py's --gemms and default modes: SDPA attention (flash and cuDNN) over sequence
length, F.linear and torch._scaled_mm at the shapes `tagcsim calibrate box` times with cuBLAS,
torch._grouped_mm at mixture-of-experts shapes, and the experts' scatter-add combine. Each sweep
stops at its deadline (time.monotonic()) and returns the rows it has, one dict a point, an error
row where PyTorch refuses a kernel.
"""
import time

import torch
import torch.nn.functional as F
from torch_timing import cuda_time  # beside this script: python puts its folder on sys.path

ATTENTION_SEQS = [512, 1024, 2048, 4096, 8192, 16384]


def attention_sweep(deadline):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    # The FlashAttention papers' benchmark: batch x seq = 16k tokens, hidden 2048.
    for hd in (64, 128):
        for causal in (True, False):
            for seq in ATTENTION_SEQS:
                for kernel, backend in backends.items():
                    if time.monotonic() > deadline:
                        return rows
                    b, h = max(1, 16384 // seq), 2048 // hd
                    q, k, v = (torch.randn(b, h, seq, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                               for _ in range(3))
                    g = torch.randn(b, h, seq, hd, device="cuda", dtype=torch.bfloat16)
                    flops = 4 * b * h * seq * seq * hd * (0.5 if causal else 1.0)
                    try:
                        with sdpa_kernel(backend):
                            fwd = cuda_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                            both = cuda_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g))
                    except RuntimeError as e:
                        rows.append({"kernel": kernel, "head_dim": hd, "causal": causal, "seq": seq,
                                     "error": str(e).splitlines()[0][:200]})
                        continue
                    row = {"kernel": kernel, "head_dim": hd, "causal": causal, "seq": seq, "batch": b, "heads": h,
                           "fwd_seconds": fwd, "fwd_bwd_seconds": both,
                           "fwd_tflops": flops / fwd / 1e12, "bwd_tflops": 2.5 * flops / max(both - fwd, 1e-9) / 1e12,
                           "fwd_bwd_tflops": 3.5 * flops / both / 1e12}
                    rows.append(row)
                    print(f"attention {kernel:5s} hd {hd:3d} causal {int(causal)} seq {seq:5d}: fwd {row['fwd_tflops']:6.1f} "
                          f"bwd {row['bwd_tflops']:6.1f} fwd+bwd {row['fwd_bwd_tflops']:6.1f} TFLOP/s", flush=True)
    return rows


# The shapes `tagcsim calibrate box` timed with cuBLAS on the H200 (calibrate/profiles/measured/
# h200-2026-12-04/device-h200.yaml), as (m, n, k): squares, and the Llama-2 7B Linears' forward,
# dgrad and wgrad at 4096-16384 tokens. Timed here as PyTorch runs them in training: F.linear
# (x @ W^T) for m x n x k, so that the two harnesses can be compared shape by shape.
GEMM_SHAPES = [(s, s, s) for s in (512, 1024, 2048, 4096, 8192, 16384)] + [
    (t, n, k) for t in (4096, 8192, 16384) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096))
] + [(4096, 4096, t) for t in (8192, 16384)] + [(11008, 4096, t) for t in (8192, 16384)] + [(32000, 4096, 8192)]


def gemm_sweep(deadline):
    rows = []
    for m, n, k in GEMM_SHAPES:
        for dtype in ("bf16", "fp8"):
            if time.monotonic() > deadline:
                return rows
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            try:
                if dtype == "bf16":
                    t = cuda_time(lambda: F.linear(x, w), iters=20)
                else:  # torchao's float8 Linear: e4m3 inputs, per-tensor scales, bf16 out
                    xf, wf = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
                    one = torch.ones((), device="cuda")
                    t = cuda_time(lambda: torch._scaled_mm(xf, wf.t(), scale_a=one, scale_b=one,
                                                           out_dtype=torch.bfloat16), iters=20)
            except RuntimeError as e:
                rows.append({"m": m, "n": n, "k": k, "dtype": dtype, "error": str(e).splitlines()[0][:200]})
                continue
            rows.append({"m": m, "n": n, "k": k, "dtype": dtype, "seconds": t, "tflops": 2 * m * n * k / t / 1e12})
            print(f"gemm {dtype} {m} x {n} x {k}: {rows[-1]['tflops']:.1f} TFLOP/s", flush=True)
    return rows


# torch._grouped_mm forward, the kernel a mixture of experts' experts run in torchtitan: rows
# split evenly over the groups (balanced routing), (total rows, n, k, groups). The shipped profiles'
# grouped efficiency comes from published runs (docs/compute-model.md, "Grouped GEMM"); these are
# the same measurement on the lent GPU: Llama 4's 16-expert shape of pytorch/ao#2490, Mixtral
# 8x7B's and Qwen3 30B-A3B's at 4,096 tokens, and gpt-oss-20b's two at 8,192 (gate and up
# interleaved, then down: the candidate for the 15% its runs share, docs/validation.md, S77).
GROUPED_SHAPES = [(8192, 8192, 5120, 16), (8192, 14336, 4096, 8), (32768, 768, 2048, 128),
                  (32768, 5760, 2880, 32), (32768, 2880, 2880, 32)]


def grouped_gemm_sweep(deadline):
    rows = []
    if not hasattr(torch, "_grouped_mm"):
        return [{"error": "this PyTorch has no torch._grouped_mm"}]
    for m, n, k, groups in GROUPED_SHAPES:
        if time.monotonic() > deadline:
            return rows
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(groups, k, n, device="cuda", dtype=torch.bfloat16)
        offs = torch.arange(m // groups, m + 1, m // groups, device="cuda", dtype=torch.int32)
        try:
            t = cuda_time(lambda: torch._grouped_mm(a, b, offs=offs), iters=20)
        except RuntimeError as e:
            rows.append({"m": m, "n": n, "k": k, "groups": groups, "error": str(e).splitlines()[0][:200]})
            continue
        rows.append({"m": m, "n": n, "k": k, "groups": groups, "pass": "fwd", "seconds": t,
                     "tflops": 2 * m * n * k / t / 1e12})
        print(f"grouped gemm bf16 {m} x {n} x {k} in {groups} groups: {rows[-1]['tflops']:.1f} TFLOP/s", flush=True)
    return rows


# The combine of torchtitan's mixture of experts (models/common/token_dispatcher.py at 1690e0ae) scatters
# the experts' outputs back onto their tokens with scatter_add under deterministic algorithms (a sort and
# an accumulating index_put); tagcsim times a plain scatter-add's bytes (docs/validation.md, B200). Both,
# at Qwen3-30B-A3B's shape: 32,768 tokens, 8 experts a token, hidden 2048, bf16.
def scatter_add_sweep(deadline, tokens=32768, top_k=8, dim=2048):
    if time.monotonic() > deadline:
        return []
    out = torch.zeros(tokens, dim, device="cuda", dtype=torch.bfloat16)
    src = torch.randn(tokens * top_k, dim, device="cuda", dtype=torch.bfloat16)
    index = torch.randperm(tokens * top_k, device="cuda") // top_k
    expanded = index.reshape(-1, 1).expand(-1, dim)
    rows = []
    for deterministic in (False, True):
        previous = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(deterministic)
        try:
            t = cuda_time(lambda: out.scatter_add(0, expanded, src), iters=20)
        except RuntimeError as e:
            rows.append({"deterministic": deterministic, "error": str(e).splitlines()[0][:200]})
            continue
        finally:
            torch.use_deterministic_algorithms(previous)
        moved = (tokens * top_k + 2 * tokens) * dim * 2  # what tagcsim counts: src read, out read and written
        rows.append({"tokens": tokens, "top_k": top_k, "dim": dim, "deterministic": deterministic, "seconds": t,
                     "GBps_counted": moved / t / 1e9})
        print(f"scatter_add {'deterministic' if deterministic else 'atomic'} {tokens} x {top_k} x {dim}: "
              f"{t * 1e3:.3f} ms ({rows[-1]['GBps_counted']:.0f} GB/s of the bytes tagcsim counts)", flush=True)
    return rows
