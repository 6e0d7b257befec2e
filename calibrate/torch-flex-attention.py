#!/usr/bin/env python3
"""FlexAttention against SDPA's flash kernel on the GPU of this machine, whole sequences and packed
documents: what tagcsim's `attention: flex` and `training.document_length` take from publications
(FlashAttention-2's curves times FlexAttention's published rates; a document as one 128 tokens
longer under the block mask) measured instead (docs/compute-model.md, "Documents and FlexAttention").

    python3 calibrate/torch-flex-attention.py OUTDIR [BUDGET_SECONDS]     # default 90

Llama 3 8B's attention (32 query heads, 8 KV heads of 128, bf16) over 16,384 tokens a call, as
torchtitan calls it: SDPA's flash backend over whole causal sequences (K and V repeated to every
head, as torchtitan's repeat_kv did), and torch.compile'd flex_attention (enable_gqa) over whole
causal sequences and over block-causal masks of documents of 256 to 4,096 tokens, at 4,096 and
8,192 tokens a sequence. Each row: forward and forward + backward seconds (CUDA events, median of
10 after 3 warm-ups) and TFLOP/s at the FLOPs the mask leaves (4 b h s d x keys a query). Writes
OUTDIR/torch-flex-attention.json; needs PyTorch >= 2.5 with CUDA. tagcsim never runs it.
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch_timing import cuda_time  # beside this script: python puts its folder on sys.path

HEADS, KV_HEADS, HEAD_DIM, TOKENS = 32, 8, 128, 16384
SEQS = (4096, 8192)
DOCUMENTS = (256, 1024, 4096)


def keys_per_query(seq, document):
    d = document if document and document < seq else seq
    return (d + 1) / 2


def measure(label, seq, document, call, q, k, v, g):
    b = q.shape[0]
    flops = 4 * b * HEADS * seq * keys_per_query(seq, document) * HEAD_DIM
    fwd = cuda_time(lambda: call(q, k, v))
    both = cuda_time(lambda: call(q, k, v).backward(g))
    row = {"kernel": label, "seq": seq, "document": document or seq, "batch": b, "heads": HEADS,
           "kv_heads": KV_HEADS, "head_dim": HEAD_DIM, "fwd_seconds": fwd, "fwd_bwd_seconds": both,
           "fwd_tflops": flops / fwd / 1e12, "fwd_bwd_tflops": 3.5 * flops / both / 1e12}
    print(f"flex {label:6s} seq {seq:5d} documents {row['document']:5d}: fwd {fwd * 1e3:7.3f} ms "
          f"({row['fwd_tflops']:6.1f} TFLOP/s), fwd+bwd {both * 1e3:7.3f} ms ({row['fwd_bwd_tflops']:6.1f})", flush=True)
    return row


def main():
    args = sys.argv[1:]
    out_dir = args[0] if args else "."
    deadline = time.monotonic() + (float(args[1]) if len(args) > 1 else 90.0)
    os.makedirs(out_dir, exist_ok=True)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    flex = torch.compile(flex_attention, dynamic=False)
    p = torch.cuda.get_device_properties(0)
    result = {"format": "tagcsim-torch-measurements/1",
              "command": "python3 calibrate/torch-flex-attention.py OUTDIR " + (args[1] if len(args) > 1 else "90"),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": p.name,
              "torch": torch.__version__, "cuda": torch.version.cuda, "rows": []}
    path = os.path.join(out_dir, "torch-flex-attention.json")
    for seq in SEQS:
        b = TOKENS // seq
        q = torch.randn(b, HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(b, KV_HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                for _ in range(2))
        g = torch.randn_like(q)
        rep = HEADS // KV_HEADS

        def sdpa(q, k, v):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                                      is_causal=True)

        cases = [("sdpa", 0, sdpa)]
        for document in (0,) + DOCUMENTS:
            # Documents of `document` tokens, each attending within itself (torchtitan's block_causal
            # mask from per-document positions), their starts 37 tokens off the 128-token blocks as
            # packed data's are; 0: one causal sequence.
            def mask_mod(b_, h_, q_idx, kv_idx, d=document):
                same = ((q_idx + 37) // d == (kv_idx + 37) // d) if d else (q_idx >= 0)
                return same & (q_idx >= kv_idx)
            block_mask = create_block_mask(mask_mod, B=None, H=None, Q_LEN=seq, KV_LEN=seq, device="cuda")
            cases.append(("flex", document,
                          lambda q, k, v, m=block_mask: flex(q, k, v, block_mask=m, enable_gqa=True)))
        for label, document, call in cases:
            if time.monotonic() > deadline:
                print(f"flex: out of budget at seq {seq}", flush=True)
                break
            try:
                result["rows"].append(measure(label, seq, document, call, q, k, v, g))
            except Exception as e:  # an old PyTorch without flex_attention's GQA, a compile failure
                result["rows"].append({"kernel": label, "seq": seq, "document": document or seq,
                                       "error": type(e).__name__ + ": " + (str(e).splitlines() or [""])[0][:200]})
                print(f"flex {label} seq {seq} documents {document}: {result['rows'][-1]['error']}", flush=True)
            with open(path, "w") as f:
                json.dump(result, f, indent=1)
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
