#!/usr/bin/env python3
"""Writes the shipped device kernel profiles (calibrate/profiles/device-*.yaml) from the published
kernel measurements in validation/data/, every point citing the id of the entry it copies.

    python3 scripts/make-device-profiles.py          # rewrite the profiles
    python3 scripts/make-device-profiles.py --check  # exit 1 if a committed profile differs

A maintainer's tool (needs python3-yaml); tagcsim reads the committed YAML and never runs this.
The format is documented in docs/compute-model.md; `tagcsim calibrate box` (a later issue)
writes the same format from measurements on a local GPU.
"""
import math
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "validation", "data", "published_kernels.yaml")
MEASUREMENTS = os.path.join(ROOT, "validation", "data", "published_measurements.yaml")
OUT = os.path.join(ROOT, "calibrate", "profiles")

entries = {}
for path in (KERNELS, MEASUREMENTS):
    for e in yaml.safe_load(open(path))["entries"]:
        entries[e["id"]] = e


def entry(eid):
    return entries[eid]


def tflops(eid):
    m = entry(eid)["measured"]
    if "tflops" in m or "mamf_tflops" in m:
        return m.get("tflops", m.get("mamf_tflops"))
    return (m.get("flops_per_s") or m["tops_per_s"]) / 1e12  # XLA's table, torchao's benchmark


# ---------------------------------------------------------------- GEMM points

def gemm_point(eid, m=None, n=None, k=None, dtype=None, note=None):
    s = entry(eid)["setup"]
    m = m or s["m"]
    n = n or s["n"]
    k = k or s["k"]
    dtype = dtype or ("fp16" if "fp16" in str(s.get("dtype", s.get("precision", ""))) else "bf16")
    p = {"m": m, "n": n, "k": k}
    if s.get("batch"):
        p["batch"] = s["batch"]
    p["dtype"] = dtype
    meas = entry(eid)["measured"]
    if any(k in meas for k in ("tflops", "mamf_tflops", "flops_per_s", "tops_per_s")):
        p["tflops"] = round(tflops(eid), 3)
    else:
        p["seconds"] = meas["latency_ms"] * 1e-3
    p["source"] = eid
    if note:
        p["note"] = note
    return p


MAMF_NOTE = ("best shape of a brute-force search; mamf-finder prints M x K x N, so k and n are "
             "read that way (FLOPs are the same either way)")

A100_GEMM = [gemm_point(f"gemm-a100-azure-cublaslt-fp16-{s}") for s in (
    "1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "16384x16384x16384",
    "1024x2145x1024", "6144x12288x12288", "802816x192x768")] + [
    gemm_point("gemm-a100-sxm-mamf-bf16", 1024, 5120, 10240, "bf16", MAMF_NOTE)]

H100_GEMM = [gemm_point(f"gemm-h100-flexgen-fp16-{n}") for n in (1024, 2048, 4096, 8192)] + [
    gemm_point("gemm-h100-sxm-mamf-bf16", 2048, 13312, 2048, "bf16", MAMF_NOTE)]

H200_GEMM = H100_GEMM + [gemm_point(f"gemm-h200-tileops-torchbmm-bfloat16-{s}") for s in (
    "b8-128x128x128", "b16-512x512x512", "b8-1024x1024x1024")]

# Float8 (e4m3) GEMMs: Azure's cuBLASLt sweeps (K16) and mamf-finder's best float8 shape (K12).
FP8_AZURE = ("1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "16384x16384x16384",
             "32768x32768x32768", "1024x2145x1024", "6144x12288x12288", "802816x192x768")
H100_FP8_GEMM = [gemm_point(f"gemm-h100-azure-cublaslt-fp8-{s}", dtype="fp8") for s in FP8_AZURE] + [
    gemm_point("gemm-h100-sxm-mamf-fp8_e4m3fn", 1024, 14336, 9216, "fp8", MAMF_NOTE)]
H200_FP8_GEMM = [gemm_point(f"gemm-h200-azure-cublaslt-fp8-{s}", dtype="fp8") for s in FP8_AZURE] + [
    gemm_point("gemm-h200-sxm-mamf-fp8_e4m3fn", 1280, 12032, 4096, "fp8", MAMF_NOTE)]

# B200: PyTorch's aten::mm squares (K26, cuBLAS), XLA's measured table where it adds shapes (K25: the
# small squares and the rectangles; its 1024-4096 squares agree with K26's within 1%), and the best
# shape of mamf-finder (K24).
B200_GEMM = ([gemm_point(f"gemm-b200-torchaopr2427-bf16-{n}x{n}x{n}") for n in (1024, 1536, 2048, 3072, 4096, 6144, 8192)] +
             [gemm_point(f"gemm-b200-xlaptable-bf16-{s}") for s in (
                 "256x256x256", "512x512x512", "2048x2048x4096", "512x4096x4096", "1024x4096x4096", "2048x4096x4096",
                 "4096x1024x4096", "4096x2048x4096", "4096x4096x256", "4096x4096x512", "4096x4096x1024",
                 "4096x4096x2048")] +
             [gemm_point("gemm-b200-mamf-bf16-1792x16128x3072", note=MAMF_NOTE)])

# ----------------------------------------------------------- attention curves

def attention_curves(gpu_prefix, refs, impl_map, direction_override=None, causal_override=None, notes=None):
    """Curves from entries attn-<gpu>-<ref>-<impl>-..., grouped by kernel, direction, causal, head dim."""
    curves = {}
    for eid, e in entries.items():
        if e["kind"] != "attention" or not eid.startswith(gpu_prefix):
            continue
        ref = e["source"]["ref"]
        if ref not in refs:
            continue
        impl = eid.split("-")[3]
        if impl not in impl_map:
            continue
        s = e["setup"]
        t = e["measured"].get("tflops")
        if t is None or s.get("seq_len") is None:
            continue
        direction = s["direction"].split(" ")[0]
        causal = s.get("causal")
        if causal is None:
            causal = causal_override
        key = (impl_map[impl], direction, bool(causal), int(s["head_dim"]))
        curves.setdefault(key, []).append({"seq": int(s["seq_len"]), "tflops": t, "source": eid})
    out = []
    for (kernel, direction, causal, hd), pts in sorted(curves.items()):
        pts.sort(key=lambda p: p["seq"])
        c = {"kernel": kernel, "direction": direction, "causal": causal, "head_dim": hd, "points": pts}
        if notes and kernel in notes:
            c["note"] = notes[kernel]
        out.append(c)
    return out


# flash-triton is Tri Dao's Triton FlashAttention (flash_attn/flash_attn_triton.py of flash-attn 1.0.x),
# which MosaicML's MPT runs as attn_impl: triton. No published A100 measurement of it is known; its
# docstring (flash-attn v1.0.3.post0) says "Overall Triton forward + backward is slightly slower than
# CUDA forward + backward", and llm-foundry's TUTORIAL.md says "triton is slightly faster than flash"
# (FlashAttention-1 CUDA). So K01's FlashAttention-1 bars stand in for it. K01's "FlashAttention Triton"
# bars are another kernel: OpenAI's triton.ops.flash_attention (benchmarks/benchmark_flash_attention.py
# imports it), whose head-dim-128 backward Tri Dao's version rewrote to stop register spilling.
FLASH_TRITON_NOTE = ("FlashAttention-1 (CUDA) bars standing in for Tri Dao's flash_attn_triton.py (MosaicML attn_impl: "
                     "triton): its docstring (flash-attn 1.0.3.post0) puts Triton fwd+bwd slightly below CUDA, "
                     "llm-foundry TUTORIAL.md slightly above; K01's Triton bars are OpenAI's triton.ops kernel")
# At head dim 128 FlashAttention-1's CUDA kernels lose 14% against head dim 64 at 16k (K01: 83 vs 97
# TFLOP/s causal), the Triton kernels do not (K01's triton.ops: 80 vs 80; the FA3 paper's Triton
# forward on H100, K03: 378 vs 363). So head dim 128 takes FlashAttention-1's head-dim-64 rate times
# the Triton lineage's head-dim-128 / head-dim-64 ratio at the same sequence length.
def triton_hd128_from_fa1(causal, fa1, triton, note):
    """Head dim 128: the `fa1` entries' head-dim-64 rate times the `triton` entries' hd128 / hd64 ratio (id prefixes)."""
    c = "causal" if causal else "noncausal"
    pts = []
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        a, t128, t64 = f"{fa1}-{c}-hd64-s{s}", f"{triton}-{c}-hd128-s{s}", f"{triton}-{c}-hd64-s{s}"
        if not all(i in entries for i in (a, t128, t64)):
            continue
        pts.append({"seq": s, "tflops": round(tflops(a) * tflops(t128) / tflops(t64), 1),
                    "source": f"model: {a} x {t128} / {t64}"})
    return {"kernel": "flash-triton", "direction": "fwd+bwd", "causal": causal, "head_dim": 128, "points": pts,
            "note": note}


A100_ATTN = [c for c in attention_curves("attn-a100-k01", {"K01"},
                                         {"fa2": "flash2", "fa1": "flash-triton", "pytorch": "math"},
                                         notes={"flash-triton": FLASH_TRITON_NOTE})
             if not (c["kernel"] == "flash-triton" and c["head_dim"] == 128)]
A100_ATTN += [triton_hd128_from_fa1(causal, "attn-a100-k01-fa1-fwdbwd", "attn-a100-k01-fatriton-fwdbwd",
                                    FLASH_TRITON_NOTE + "; head dim 128: the head-dim-64 rate times the Triton "
                                    "lineage's hd128/hd64 ratio") for causal in (False, True)]
A100_ATTN.sort(key=lambda c: (c["kernel"], c["direction"], c["causal"], c["head_dim"]))
# H100: Tri Dao's Triton kernel the same way, from the FlashAttention-2 figures' FlashAttention-1 bars on H100
# (K02, head dim 64) and, at head dim 128, that rate times the FA3 paper's Triton forward hd128 / hd64 ratio
# on H100 (K03: the only Triton lineage measured there, forward only).
H100_TRITON_NOTE = FLASH_TRITON_NOTE.replace("K01's Triton bars are OpenAI's triton.ops kernel",
                                             "on H100 from K02's FlashAttention-1 bars")
H100_TRITON = sorted(
    [c for c in attention_curves("attn-h100-k02", {"K02"}, {"fa1": "flash-triton"}, notes={"flash-triton": H100_TRITON_NOTE})
     if c["head_dim"] == 64] +
    [triton_hd128_from_fa1(causal, "attn-h100-k02-fa1-fwdbwd", "attn-h100-k03-triton-fwd",
                           H100_TRITON_NOTE + "; head dim 128: the head-dim-64 rate times K03's Triton forward "
                           "hd128/hd64 ratio") for causal in (False, True)],
    key=lambda c: (c["causal"], c["head_dim"]))


H100_ATTN = (attention_curves("attn-h100-k02", {"K02"}, {"fa2": "flash2", "pytorch": "math"}) +
             attention_curves("attn-h100-k03", {"K03"}, {"fa2": "flash2", "fa3": "flash3", "cudnn": "cudnn"}) +
             attention_curves("attn-h100-k04", {"K04"}, {"fa2": "flash2", "fa3": "flash3", "cudnn": "cudnn"},
                              causal_override=False) +
             H100_TRITON)
# B200: FlashAttention-2 (2.7.4, built for SM80: no Blackwell path) from K28 (head dim 64, forward, backward
# and both) and K29 (head dim 128, forward), and eager attention from K28. FlashAttention-4 (K27) has no
# kernel kind here yet.
B200_ATTN = (attention_curves("attn-b200-fa2issue1589", {"K28"}, {"fa2": "flash2", "torchnaive": "math"}) +
             attention_curves("attn-b200-tritonbench171", {"K29"}, {"fa2": "flash2"}))
for c in B200_ATTN:  # K29 starts at 128 tokens, where launches, not the kernel, set the time (as the other GPUs' 512)
    c["points"] = [p for p in c["points"] if p["seq"] >= 512]
# No causal FlashAttention-2 curve was published for B200. A causal tiled kernel skips the blocks above
# the diagonal and masks those on it; the share that costs shrinks with the sequence, and the kernels
# measured both ways agree on it (docs/compute-model.md). So each non-causal curve, times the H100's
# FlashAttention-2 causal / non-causal ratio at its sequence and head dim, is its causal curve: the
# same SM80 code runs on both GPUs (flash-attn 2 has no Hopper or Blackwell path). The forward takes
# K03's forward ratio, the backward and the sum K02's forward + backward one (the backward is 2.5 of
# its 3.5 FLOPs; no causal backward was measured on H100).
def causal_from_h100(curve):
    ratio = "attn-h100-k03-fa2-fwd" if curve["direction"] == "fwd" else "attn-h100-k02-fa2-fwdbwd"
    pts = []
    for p in curve["points"]:
        c, n = (f"{ratio}-{k}-hd{curve['head_dim']}-s{p['seq']}" for k in ("causal", "noncausal"))
        if c in entries and n in entries:
            pts.append({"seq": p["seq"], "tflops": round(p["tflops"] * tflops(c) / tflops(n), 1),
                        "source": f"model: {p['source']} x {c} / {n}"})
    return dict(curve, causal=True, points=pts,
                note="the non-causal curve times the H100's FlashAttention-2 causal / non-causal ratio (no causal "
                     "B200 measurement)")


B200_ATTN += [causal_from_h100(c) for c in B200_ATTN if c["kernel"] == "flash2" and not c["causal"]]
# PyTorch's SDPA runs cuDNN's kernel on Blackwell where it is asked first (torchtitan does); no B200 cuDNN curve is
# published as text, so FlashAttention-4's forward (K27) stands in for it, its backward at the profile's bwd/fwd ratio.
B200_ATTN += attention_curves("attn-b200-fa4c2642", {"K27"}, {"fa4": "cudnn"}, notes={"cudnn": (
    "FlashAttention-4 (flash_attn/cute, SM100) forward stands in for cuDNN's SDPA kernel: Dao-AILab/flash-attention"
    "#2605 times both forward on one Blackwell GPU (head dim 64, causal): at 4k-16k tokens cuDNN's rate is within "
    "-10% to +7% of FA4's (the PR's two runs), at 1k-2k 5-35% above it; no B200 cuDNN curve is published as text. Backward: the profile's bwd/fwd ratio; "
    "#2280 measures FA4's at 0.852 (hd128, causal, 8k tokens, 2-CTA backward 1,208.6 against forward 1,418.1 "
    "TFLOP/s on an SM100 GPU), the ratio here 0.856")})
BWD_FWD = {
    "ratio": round(0.5 * (tflops("attn-h100-k04-fa2-bwd-hd64-s4096") / tflops("attn-h100-k03-fa2-fwd-noncausal-hd64-s4096") +
                          tflops("attn-h100-k04-fa2-bwd-hd128-s4096") / tflops("attn-h100-k03-fa2-fwd-noncausal-hd128-s4096")), 3),
    "source": ("mean of FlashAttention-2 backward / forward TFLOP/s at seq 4096 on H100, head dim 64 and 128: "
               "attn-h100-k04-fa2-bwd-hd64-s4096 / attn-h100-k03-fa2-fwd-noncausal-hd64-s4096 and "
               "attn-h100-k04-fa2-bwd-hd128-s4096 / attn-h100-k03-fa2-fwd-noncausal-hd128-s4096 (K04's backward "
               "is taken as non-causal)"),
}

# FlexAttention (torch.compile's Triton template) has no published curve, only its rate against
# FlashAttention-2 on A100 (K34) and H100 (K35), per direction: its curves are the profile's
# FlashAttention-2 curves times those ratios. A fwd+bwd curve takes r = 3.5 / (1/r_f + 2.5/(r_b rho)) x
# (1 + 2.5/rho) / 3.5 of it, the time of a forward at r_f and a backward at r_b, with rho the profile's
# backward / forward rate ratio.
def flex_curves(curves, fwd_id, bwd_id, rho, note):
    r_f = entry(fwd_id)["measured"]["fraction_of_fa2"]
    r_b = entry(bwd_id)["measured"]["fraction_of_fa2"]
    ratio = {"fwd": (r_f, fwd_id), "bwd": (r_b, bwd_id),
             "fwd+bwd": ((1 + 2.5 / rho) / (1 / r_f + 2.5 / (r_b * rho)), f"{fwd_id}, {bwd_id}")}
    out = []
    for c in curves:
        if c["kernel"] != "flash2":
            continue
        r, ids = ratio[c["direction"]]
        out.append({"kernel": "flex", "direction": c["direction"], "causal": c["causal"], "head_dim": c["head_dim"],
                    "points": [{"seq": p["seq"], "tflops": round(p["tflops"] * r, 1),
                                "source": f"model: {p['source']} x {ids}"} for p in c["points"]],
                    "note": note})
    return out


FLEX_NOTE = ("FlexAttention: FlashAttention-2's curve times FlexAttention's published rate against it ({}); "
             "no FlexAttention curve is published as text")
A100_ATTN += flex_curves(A100_ATTN, "attn-a100-k34-flex-vs-fa2-fwd", "attn-a100-k34-flex-vs-fa2-bwd", BWD_FWD["ratio"],
                         FLEX_NOTE.format("A100, PyTorch's FlexAttention blog: 0.90 forward, 0.85 backward"))
H100_ATTN += flex_curves(H100_ATTN, "attn-h100-k35-flex-vs-fa2-fwd", "attn-h100-k35-flex-vs-fa2-bwd", BWD_FWD["ratio"],
                         FLEX_NOTE.format("H100, the GTC 2025 session abstract: ~1.25 forward, ~1.03 backward"))

# ------------------------------------------------------------- memory curves

SMALL_KERNEL_FLOOR = 65536 / (entry("membw-h200-gpubenches-smallkernels-stream-4096")["measured"]["GBps_by_block_size"][256] * 1e9)
FLOOR_SOURCE = "membw-h200-gpubenches-smallkernels-stream-4096"


def memory_model(stream_gbps, stream_source):
    """t(bytes) = floor + bytes / STREAM bandwidth, at sizes from 64 KiB to 1 GiB."""
    pts = []
    for b in [65536 * 4 ** i for i in range(0, 10)]:
        t = SMALL_KERNEL_FLOOR + b / (stream_gbps * 1e9)
        pts.append({"bytes": b, "GBps": round(b / t / 1e9, 1),
                    "source": f"model: {SMALL_KERNEL_FLOOR * 1e6:.2f} us ({FLOOR_SOURCE}) + bytes / {stream_gbps} GB/s ({stream_source})"})
    return pts


def gbps(eid):
    m = entry(eid)["measured"]
    return m["GBps"] if "GBps" in m else m["TBps"] * 1000


# ------------------------------------------------------------------ profiles

COMMON_HOST = {
    "issue_seconds": "6.8 us",
    "hook_seconds": "50 us",
    "source": ("issue_seconds: launch-cpu-pt41383-scalar-mul-grad (eager PyTorch op with autograd, 6.8 s per "
               "million ops); hook_seconds: assumed (no published measurement of FSDP's Python hooks in "
               "validation/data), one pre- and one post-hook per unit and pass"),
}
LAUNCH = {"min_kernel_seconds": f"{SMALL_KERNEL_FLOOR * 1e6:.2f} us",
          "source": f"{FLOOR_SOURCE}: 64 KiB per back-to-back launch at 26 GB/s (H200; taken for every GPU)"}
K_OVERHEAD = {
    "k_overhead": 192,
    "k_overhead_source": ("TileLang fp16 GEMMs 8192 x 8192 x k on H800 (gemm-h800-tilelang-fp16-8192x8192x*): "
                          "rate(k) / rate(16384) = k / (k + k0) gives k0 = 160..250 for k = 256..4096; 192 taken. "
                          "The measured points correct the model where they are"),
}


TILES = {
    "tiles": [[256, 128], [128, 256], [128, 128], [128, 64], [64, 128]],
    "max_split_k": 8,
    "tiles_source": ("the CTA tile shapes of CUTLASS's default SM80/SM90 tensor-core GEMM configurations; cuBLAS's "
                     "heuristics choose among such tiles and split k when the tiles leave SMs idle (assumed: the "
                     "measured points correct the model where they are)"),
}


# A measured torch._grouped_mm: its stacked shape, its groups, one forward or a forward and backward.
def grouped_point(eid, note=None):
    e = entry(eid)
    s, meas = e["setup"], e["measured"]
    seconds = meas["seconds"] if "seconds" in meas else meas["us"] * 1e-6
    p = {"m": s["m"], "n": s["n"], "k": s["k"], "groups": s["groups"], "pass": s["direction"],
         "time": f"{seconds * 1e6:g} us", "dtype": s["dtype"], "source": eid}
    if note:
        p["note"] = note
    return p


H100_GROUPED = [grouped_point(f"grouped-gemm-h100-ao2490-bf16-{shape}-g16") for shape in ("8192x8192x5120", "8192x5120x8192")]
B200_GROUPED = [grouped_point(f"grouped-gemm-b200-ao-moe-readme-bf16-fwdbwd-{shape}-g{g}")
                for shape in ("128000x8192x5120", "128000x2048x7168") for g in (2, 4, 8)]


# How PyTorch runs torch._grouped_mm on the GPU: read in PyTorch's source (_grouped_mm_cuda in
# aten/src/ATen/native/cuda/Blas.cpp picks CUTLASS's kernel or the fallback by compute capability).
GROUPED_MM_SM90 = {"kernel": "fused", "source": (
    "PyTorch's _grouped_mm_cuda (aten/src/ATen/native/cuda/Blas.cpp) runs CUTLASS's grouped GEMM on compute "
    "capability 9.0, as since torch._grouped_mm appeared (PyTorch 2.8)")}
GROUPED_MM_SM100 = {"kernel": "fused", "source": (
    "PyTorch's _grouped_mm_cuda runs CUTLASS's grouped GEMM on compute capability 10.x since pytorch#156203 "
    "(June 2025, PyTorch 2.9); PyTorch 2.8 refused it there")}
GROUPED_MM_SM80 = {"kernel": "per_group", "source": (
    "compute capability 8.x has no CUTLASS grouped GEMM in PyTorch: from PyTorch 2.9 _grouped_mm_cuda runs "
    "_grouped_mm_fallback (pytorch#161407; aten/src/ATen/native/GroupedMMUtils.h), which copies the offsets to "
    "the host (offs.cpu()) and calls at::mm_out once per group; PyTorch 2.8 refused it (capability 9.0 only)")}


def profile(name, gpu, family, meta, peak, gemm_points, attn, memory, grouped_mm, also=None, tiles_source=None,
            grouped=None):
    tiles = {**TILES, **({"tiles_source": tiles_source} if tiles_source else {})}
    return {
        "format": "tagcsim-device-profile/1",
        "name": name,
        "gpu": gpu,
        **({"also_serves": also} if also else {}),
        "family": family,
        "metadata": meta,
        "peak": peak,
        "gemm": {**tiles, **K_OVERHEAD, "points": gemm_points, **({"grouped": grouped} if grouped else {}),
                 "grouped_mm": grouped_mm},
        "attention": {"bwd_fwd_rate_ratio": BWD_FWD["ratio"], "bwd_fwd_source": BWD_FWD["source"], "curves": attn},
        "memory": {"points": memory},
        "launch": LAUNCH,
        "host": COMMON_HOST,
    }


A100_PEAK = {"bf16": "312 TFLOP/s", "tf32": "156 TFLOP/s", "fp32": "19.5 TFLOP/s",
             "source": "NVIDIA A100 datasheet (dense)"}
B200_PEAK = {"bf16": "2250 TFLOP/s", "tf32": "1100 TFLOP/s", "fp32": "80 TFLOP/s", "fp8": "4500 TFLOP/s",
             "source": "NVIDIA HGX B200 datasheet, 1,000 W (dense)"}
H100_PEAK = {"bf16": "989.4 TFLOP/s", "tf32": "494.7 TFLOP/s", "fp32": "66.9 TFLOP/s", "fp8": "1979 TFLOP/s",
             "source": "NVIDIA H100 SXM5 datasheet (dense)"}


def meta(gpu_name, sms, clocks, measured_by, notes, driver="per point (see each source)", cuda="per point",
         cublas="per point (cuBLAS via PyTorch or cuBLASLt)", cudnn="not used (FlashAttention kernels)"):
    return {"gpu_name": gpu_name, "sms": sms, "clocks": clocks, "driver": driver, "cuda": cuda,
            "cublas": cublas, "cudnn": cudnn, "measured_by": measured_by, "notes": notes}


ASSEMBLED = ("assembled by scripts/make-device-profiles.py from published measurements "
             "(validation/data/published_kernels.yaml and published_measurements.yaml); nothing measured by us")

PROFILES = {
    "device-a100-40gb": profile(
        "device-a100-40gb", "A100-SXM4-40GB", "ampere",
        meta("NVIDIA A100-SXM4-40GB", 108, "1410 MHz SM boost, 1215 MHz HBM2 (datasheet)", ASSEMBLED,
             "GEMM and attention points were measured on A100 80GB (same SMs and clocks; GEMM and attention "
             "rates do not depend on the HBM size); memory-bound kernels use the 40GB part's STREAM bandwidth. "
             "Azure points: CUDA 12.5, driver 550.90.07, PyTorch 2.4.1 (K15)."),
        A100_PEAK, A100_GEMM, A100_ATTN,
        memory_model(gbps("membw-a100-40-gpubenches-stream-scale-occ100"), "membw-a100-40-gpubenches-stream-scale-occ100"),
        GROUPED_MM_SM80, also=["A100-PCIe-40GB"]),
    "device-a100-80gb": profile(
        "device-a100-80gb", "A100-SXM4-80GB", "ampere",
        meta("NVIDIA A100-SXM4-80GB", 108, "1410 MHz SM boost, 1593 MHz HBM2e (datasheet)", ASSEMBLED,
             "Azure points: CUDA 12.5, driver 550.90.07, PyTorch 2.4.1 (K15)."),
        A100_PEAK, A100_GEMM, A100_ATTN,
        memory_model(gbps("membw-a100-80-gpubenches-stream-scale-occ100"), "membw-a100-80-gpubenches-stream-scale-occ100"),
        GROUPED_MM_SM80, also=["A100-PCIe-80GB", "A100-SXM-64GB"]),
    "device-h100-sxm": profile(
        "device-h100-sxm", "H100-SXM5-80GB", "hopper",
        meta("NVIDIA H100 80GB HBM3 (SXM5, 700 W)", 132, "1980 MHz SM boost, 2619 MHz HBM3 (datasheet)", ASSEMBLED,
             "GEMM: FlexGen's square matmuls (host-timed) and the best matmul of mamf-finder; attention: the "
             "FlashAttention-2 figures (K02) and the FlashAttention-3 paper's (K03 forward, K04 backward). "
             "No H100 STREAM in the sources beside BabelStream (K16)."),
        H100_PEAK, H100_GEMM + H100_FP8_GEMM, H100_ATTN,
        memory_model(gbps("membw-h100-azure-babelstream-mul"), "membw-h100-azure-babelstream-mul"),
        GROUPED_MM_SM90, also=["H800-SXM5-80GB", "H100-PCIe-80GB", "H100-NVL-94GB"], grouped=H100_GROUPED),
    "device-h200-sxm": profile(
        "device-h200-sxm", "H200-SXM-141GB", "hopper",
        meta("NVIDIA H200 141GB (SXM)", 132, "1980 MHz SM boost (datasheet)", ASSEMBLED,
             "Same GH100 compute as H100 SXM, so the H100 GEMM and attention points stand in (the Azure "
             "FlashAttention-2 figure agrees: 329.3 TFLOP/s on H200, attn-h200-azure-fa2-hd128-b2-s8192, "
             "against 327.9 on H100, attn-h100-azure-fa2-hd128-b2-s8192), with TileOPs' small H200 batched "
             "GEMMs (K20: CUDA 13.2, PyTorch 2.13), and H100's grouped GEMMs (K32). Memory: BabelStream Mul on H200 (K17), as the H100's is its "
             "own (K16); gpu-benches' small-kernel curve (K19) tops out at 3.3 TB/s with blocks of 256, where "
             "BabelStream gives 4.0 and a vectorized copy on our H200 4.17 (calibrate/profiles/measured/"
             "h200-2026-12-04), so it sets only the launch floor. Also times GH200's GPU (the same die with 96 GB "
             "of HBM3 at 4.0 TB/s: the memory curve scaled to it; no GH200 kernel measurement is in the profile)."),
        H100_PEAK, H200_GEMM + H200_FP8_GEMM, H100_ATTN,
        memory_model(gbps("membw-h200-azure-babelstream-mul"), "membw-h200-azure-babelstream-mul"),
        GROUPED_MM_SM90, also=["GH200-96GB"], grouped=H100_GROUPED),
    "device-b200": profile(
        "device-b200", "B200-SXM-180GB", "blackwell",
        meta("NVIDIA B200 180GB (HGX B200, 1,000 W)", 148, "datasheet boost not published per SM; as measured", ASSEMBLED,
             "GEMM: PyTorch's bf16 aten::mm squares (K26), XLA's measured matmul table (K25), mamf-finder's best "
             "shape (K24: torch 2.7.1+cu128). Attention: FlashAttention-2 2.7.4 (K28: torch 2.8 nightly, cu128; K29), "
             "the only published B200 attention curves a PyTorch SDPA or flash-attn 2 run uses; FlashAttention-4 "
             "and cuDNN are not in the profile. Memory: CUB's element-wise add on 2^28 fp16 (K30, nvbench) with "
             "the small-kernel floor of H200 (K19). Not validated against B200 FSDP throughput beyond one "
             "torchtitan row (docs/validation.md); the family's scales are not fitted. Also times GB200's GPUs "
             "(the same die at up to 1,200 W), at the B200's fitted scale and the datasheets' bf16 peaks, 2,500 "
             "against 2,250 TFLOP/s; the one GB200 kernel measurement, mamf-finder's best bf16 matmul (K24: 1,822 "
             "TFLOP/s, 1.044x the B200's 1,745), is not a profile point. Times B300's and GB300's GPUs (Blackwell "
             "Ultra) the same way, at their datasheets' bf16 peaks (2,250 and 2,500 TFLOP/s); B300's published "
             "sustained cuBLAS bf16 rates (QuickRunCUDA, 8192^3 at 1,486-1,517 TFLOP/s) are not profile points."),
        B200_PEAK, B200_GEMM, B200_ATTN,
        memory_model(gbps("membw-b200-cccl7391-add-f16-2e28"), "membw-b200-cccl7391-add-f16-2e28"),
        GROUPED_MM_SM100, also=["GB200-186GB", "B300-SXM-288GB", "GB300-288GB"], grouped=B200_GROUPED,
        tiles_source=("assumed as for SM80/SM90 (CUTLASS's default tensor-core tiles; SM100's two-SM tiles are "
                      "not modelled): the measured points correct the model where they are")),
}

# ------------------------------------------------------------------ writing

def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and (abs(v) < 1e-3 or abs(v) >= 1e7):
            return f"{v:.6g}"
        return f"{v:g}" if isinstance(v, float) else str(v)
    s = str(v)
    return yaml.safe_dump(s, default_style=None, width=10_000).strip().removesuffix("...").strip()


def flow_scalar(v):
    if isinstance(v, str) and any(c in v for c in ",:{}[]#&*!|>'\"%@`"):
        return "'" + v.replace("'", "''") + "'"
    return scalar(v)


def flow(d):
    return "{" + ", ".join(f"{k}: {flow_scalar(v)}" for k, v in d.items()) + "}"


def emit(p):
    out = [f"# Kernel profile: {p['metadata']['gpu_name']}.",
           "# Written by scripts/make-device-profiles.py from validation/data; every point names its source",
           "# entry. Format and interpolation: docs/compute-model.md.",
           f"format: {p['format']}", f"name: {p['name']}", f"gpu: {scalar(p['gpu'])}"]
    if "also_serves" in p:
        out.append(f"also_serves: [{', '.join(scalar(x) for x in p['also_serves'])}]")
    out.append(f"family: {p['family']}")
    out.append("metadata:")
    for k, v in p["metadata"].items():
        out.append(f"  {k}: {scalar(v)}")
    out.append(f"peak: {flow(p['peak'])}")
    g = p["gemm"]
    out += ["gemm:", "  tiles: [" + ", ".join(f"[{a}, {b}]" for a, b in g["tiles"]) + "]",
            f"  max_split_k: {g['max_split_k']}", f"  tiles_source: {scalar(g['tiles_source'])}",
            f"  k_overhead: {g['k_overhead']}",
            f"  k_overhead_source: {scalar(g['k_overhead_source'])}", "  points:"]
    out += [f"    - {flow(pt)}" for pt in g["points"]]
    if "grouped" in g:
        out.append("  grouped:")
        out += [f"    - {flow(pt)}" for pt in g["grouped"]]
    out.append(f"  grouped_mm: {flow(g['grouped_mm'])}")
    a = p["attention"]
    out += ["attention:", f"  bwd_fwd_rate_ratio: {a['bwd_fwd_rate_ratio']}",
            f"  bwd_fwd_source: {scalar(a['bwd_fwd_source'])}", "  curves:"]
    for c in a["curves"]:
        out.append(f"    - kernel: {c['kernel']}")
        out.append(f"      direction: {c['direction']}")
        out.append(f"      causal: {scalar(c['causal'])}")
        out.append(f"      head_dim: {c['head_dim']}")
        if "note" in c:
            out.append(f"      note: {scalar(c['note'])}")
        out.append("      points:")
        out += [f"        - {flow(pt)}" for pt in c["points"]]
    out += ["memory:", "  points:"]
    out += [f"    - {flow(pt)}" for pt in p["memory"]["points"]]
    out.append(f"launch: {flow(p['launch'])}")
    out.append(f"host: {flow(p['host'])}")
    return "\n".join(out) + "\n"


def main():
    check = "--check" in sys.argv
    bad = False
    for name, p in PROFILES.items():
        text = emit(p)
        assert yaml.safe_load(text)["name"] == name
        path = os.path.join(OUT, name + ".yaml")
        if check:
            if not os.path.exists(path) or open(path).read() != text:
                print(f"{path}: differs from what the script writes", file=sys.stderr)
                bad = True
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {path}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
