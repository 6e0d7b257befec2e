// Row-major tensors [batch x heads, seq, head_dim] in bf16. A row-major X[r x c] is the
// column-major X^T, so each product below is written as cuBLAS's column-major one.
#include "calibrate/box/attention.hpp"

#include "calibrate/box/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tagcsim::calibrate::box {

MathAttention::MathAttention(Gemm& gemm, std::size_t bh, std::size_t seq, std::size_t hd)
    : gemm_(gemm), bh_(bh), seq_(seq), hd_(hd) {
  // Query blocks of seq / 8 rows (at least 128, and dividing seq): 8 blocks skip 7/16 of a causal
  // score matrix, flash attention's 1/2 less the diagonal blocks.
  block_ = std::max<std::size_t>(std::min<std::size_t>(seq, 128), seq / 8);
  while (seq_ % block_) --block_;
  const std::size_t x = bh_ * seq_ * hd_ * 2;
  for (auto* b : {&q_, &k_, &v_, &o_, &dout_, &dq_, &dk_, &dv_}) *b = DeviceBuffer(x);
  p_ = DeviceBuffer(bh_ * block_ * seq_ * 2);
  dp_ = DeviceBuffer(bh_ * block_ * seq_ * 2);
  unsigned seed = 11;
  for (auto* b : {&q_, &k_, &v_, &dout_}) kern::fill_uniform(b->get(), bh_ * seq_ * hd_, kern::Fill::Bf16, seed++, nullptr);
  BOX_CUDA(cudaDeviceSynchronize());
}

void MathAttention::scores(std::size_t i, std::size_t keys, bool causal, cudaStream_t s) {
  const long long tok = (long long)(seq_ * hd_);
  auto* q = static_cast<char*>(q_.get()) + i * block_ * hd_ * 2;
  // S^T[keys x c] = K[keys x d] Q_i^T[d x c]: K stored as [d x keys] column-major -> op T.
  gemm_.run({.m = keys, .n = block_, .k = hd_, .ta = true, .tb = false, .a = k_.get(), .lda = hd_, .stride_a = tok,
             .b = q, .ldb = hd_, .stride_b = tok, .c = p_.get(), .ldc = keys, .stride_c = (long long)(block_ * keys),
             .batch = int(bh_)},
            GemmType::Bf16, s);
  kern::softmax_bf16(p_.get(), bh_ * block_, keys, float(1 / std::sqrt(double(hd_))), causal, i * block_, block_, s);
}

void MathAttention::forward(bool causal, cudaStream_t s) {
  const long long tok = (long long)(seq_ * hd_);
  for (std::size_t i = 0; i < seq_ / block_; ++i) {
    const std::size_t keys = causal ? (i + 1) * block_ : seq_;
    scores(i, keys, causal, s);
    // O_i^T[d x c] = V^T[d x keys] P^T[keys x c].
    gemm_.run({.m = hd_, .n = block_, .k = keys, .a = v_.get(), .lda = hd_, .stride_a = tok, .b = p_.get(), .ldb = keys,
               .stride_b = (long long)(block_ * keys), .c = static_cast<char*>(o_.get()) + i * block_ * hd_ * 2,
               .ldc = hd_, .stride_c = tok, .batch = int(bh_)},
              GemmType::Bf16, s);
  }
}

void MathAttention::backward(bool causal, cudaStream_t s) {
  const long long tok = (long long)(seq_ * hd_);
  for (std::size_t i = 0; i < seq_ / block_; ++i) {
    const std::size_t keys = causal ? (i + 1) * block_ : seq_;
    const long long sc = (long long)(block_ * keys);
    auto* dout = static_cast<char*>(dout_.get()) + i * block_ * hd_ * 2;
    auto* q = static_cast<char*>(q_.get()) + i * block_ * hd_ * 2;
    scores(i, keys, causal, s);  // recomputed, as flash attention's backward does
    // dP^T[keys x c] = V[keys x d] dO_i^T[d x c].
    gemm_.run({.m = keys, .n = block_, .k = hd_, .ta = true, .a = v_.get(), .lda = hd_, .stride_a = tok, .b = dout,
               .ldb = hd_, .stride_b = tok, .c = dp_.get(), .ldc = keys, .stride_c = sc, .batch = int(bh_)},
              GemmType::Bf16, s);
    // dV^T[d x keys] += dO_i^T[d x c] P_i[c x keys].
    gemm_.run({.m = hd_, .n = keys, .k = block_, .tb = true, .a = dout, .lda = hd_, .stride_a = tok, .b = p_.get(),
               .ldb = keys, .stride_b = sc, .c = dv_.get(), .ldc = hd_, .stride_c = tok, .batch = int(bh_), .beta = 1},
              GemmType::Bf16, s);
    kern::softmax_backward_bf16(dp_.get(), p_.get(), bh_ * block_, keys, s);
    // dQ_i^T[d x c] = K^T[d x keys] dS^T[keys x c].
    gemm_.run({.m = hd_, .n = block_, .k = keys, .a = k_.get(), .lda = hd_, .stride_a = tok, .b = dp_.get(), .ldb = keys,
               .stride_b = sc, .c = static_cast<char*>(dq_.get()) + i * block_ * hd_ * 2, .ldc = hd_, .stride_c = tok,
               .batch = int(bh_)},
              GemmType::Bf16, s);
    // dK^T[d x keys] += Q_i^T[d x c] dS[c x keys].
    gemm_.run({.m = hd_, .n = keys, .k = block_, .tb = true, .a = q, .lda = hd_, .stride_a = tok, .b = dp_.get(),
               .ldb = keys, .stride_b = sc, .c = dk_.get(), .ldc = hd_, .stride_c = tok, .batch = int(bh_), .beta = 1},
              GemmType::Bf16, s);
  }
}

double time_attention(Gemm& gemm, std::size_t bh, std::size_t seq, std::size_t hd, bool causal, bool backward,
                      int warmup, int iters, cudaStream_t s) {
  MathAttention a(gemm, bh, seq, hd);
  return time_median(warmup, iters, s, [&] { backward ? a.backward(causal, s) : a.forward(causal, s); });
}

}  // namespace tagcsim::calibrate::box
