// Attention forward and backward on one GPU, "math-blocked": cuBLASLt batched GEMMs for QK^T and
// PV and a softmax kernel, one query block at a time against the key blocks at or before it, so a
// causal mask skips the fully masked blocks as flash attention skips masked tiles; the backward
// recomputes the scores as flash attention does. It stands in for cuDNN's fused SDPA, whose graph
// needs the header-only cudnn-frontend (not a Debian package): cuDNN 9's backend API has SDPA
// operation descriptors but no documented causal mask. It is slower than a fused kernel (the
// scores go through HBM); the profile and the report say which kernel ran. GQA is run with every
// head's own K and V (the same FLOPs; K/V reads differ slightly).
#pragma once

#include "calibrate/box/gemm.hpp"

namespace tagcsim::calibrate::box {

class MathAttention {
 public:
  MathAttention(Gemm& gemm, std::size_t batch_heads, std::size_t seq, std::size_t head_dim);
  void forward(bool causal, cudaStream_t s);
  void backward(bool causal, cudaStream_t s);
  std::size_t block() const { return block_; }

 private:
  void scores(std::size_t i, std::size_t keys, bool causal, cudaStream_t s);  // P of query block i
  Gemm& gemm_;
  std::size_t bh_, seq_, hd_, block_;
  DeviceBuffer q_, k_, v_, o_, dout_, dq_, dk_, dv_, p_, dp_;
};

// Median seconds of one forward (or backward) call.
double time_attention(Gemm& gemm, std::size_t batch_heads, std::size_t seq, std::size_t head_dim, bool causal,
                      bool backward, int warmup, int iters, cudaStream_t s);

}  // namespace tagcsim::calibrate::box
