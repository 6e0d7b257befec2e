// The kernels PyTorch runs for one FSDP unit, with their shapes.
//
// A unit's forward and backward become lists of kernels of three kinds: GEMMs (m, n, k),
// flash-attention calls (batch x heads, sequence, head dim, causality) and memory-bound
// kernels (bytes moved through HBM). The device profile (sim/kernel_profile.hpp) times each;
// sim/compute.hpp adds FSDP's own kernels (casts, gradient division, the optimizer).
// docs/compute-model.md lists every kernel and its bytes; kernel_list.cpp is the one place
// they are written down.
#pragma once

#include "models/model.hpp"

#include <string>
#include <vector>

namespace tagcsim::models {

enum class KernelKind { Gemm, Attention, Memory };
enum class Pass { Forward, Backward, Recompute };  // Recompute: the forward again, under checkpointing
// A block's sequence collectives under tensor parallelism: the all-gather before attention's
// q/k/v (and the reduce-scatter of their input gradient), the reduce-scatter after its out
// projection (and the all-gather of its output gradient), the same pair around the MLP.
enum class TpSite { None, AttentionIn, AttentionOut, MlpIn, MlpOut };

struct Kernel {
  KernelKind kind = KernelKind::Memory;
  Pass pass = Pass::Forward;
  std::string op;  // what it is ("attn.qkv dgrad", "layer_norm", "cross_entropy bwd")
  // Gemm: C[m x n] = A[m x k] B[k x n]; fp8: float8 inputs (torchao's Float8Linear), bf16 output.
  double m = 0, n = 0, k = 0;
  bool fp8 = false;
  // fp32 inputs and output without TF32 (the router gate under fp32 autocast): CUDA cores, not
  // tensor cores, at the GPU's fp32 rate.
  bool fp32 = false;
  // A grouped GEMM (torch._grouped_mm over a mixture of experts' experts): this many GEMMs in one
  // launch, their rows stacked into m (or, for the weight gradients, their outputs): the device
  // profile times it as that dense GEMM at its measured grouped rate.
  int groups = 1;
  // Launched as torch._grouped_mm (even over one expert's rows): not the aten.mm that torchtitan's
  // op-level checkpointing counts and keeps (models/kernel_list.cpp, kept_by_selective_op).
  bool grouped = false;
  // Tensor parallelism: the block collective the GEMM sits beside, reading the all-gathered
  // sequence (or its gathered output gradient) or writing the partial sums reduce-scattered to the
  // sequence shards. Async TP fuses the two, one chunk of m / tp rows per GPU (sim/model_parallel.hpp).
  TpSite tp_site = TpSite::None;
  // Attention: one flash-attention forward or backward call over `batch_heads` (batch x query
  // heads) sequences of `seq` tokens; kv_heads is per sequence (GQA when below the query heads).
  double batch_heads = 0, seq = 0, head_dim = 0;
  int kv_heads = 0;
  bool causal = true;
  double window = 0;  // causal within the last `window` keys (sliding window); 0 = none
  // Documents of this many tokens packed into each sequence, each attending only within itself
  // (Implementation::document_length); 0 = none.
  double document = 0;
  // Context parallelism: the call is one GPU's share, 1/query_shards of the queries against every
  // key, load-balanced so that it does 1/query_shards of the causal work.
  double query_shards = 1;
  bool backward = false;
  // Memory: bytes read plus bytes written.
  double bytes = 0;
  // The host reads its result back (torch.nonzero's size, .item()) and issues nothing until it is
  // done: the kernels after it start only as the host issues them (sim/compute.cpp).
  bool host_sync = false;

  // FLOPs the kernel performs: 2mnk for a GEMM; for attention the flash-attention convention,
  // 4 * batch_heads * seq^2 * head_dim forward, halved when causal (the masked tiles are
  // skipped), within a window 4 * batch_heads * seq * head_dim * (window - window^2 / 2seq), with
  // documents of d tokens 4 * batch_heads * seq * head_dim * d / 2, and 2.5x that backward (it
  // recomputes QK^T); 0 for memory-bound kernels.
  double flops() const;
};

struct UnitKernels {
  std::vector<Kernel> forward;
  std::vector<Kernel> backward;  // under checkpointing, starts with the forward's kernels again (Pass::Recompute)
  bool recomputes = false;
};

// The kernel lists of every unit of fsdp_units(m, policy, shape), in the same order. Units of
// the same kind (every block, or every layer's q projection) share one list.
std::vector<std::shared_ptr<const UnitKernels>> unit_kernels(const TransformerConfig& m, WrapPolicy policy,
                                                            const TrainingShape& shape);

}  // namespace tagcsim::models
