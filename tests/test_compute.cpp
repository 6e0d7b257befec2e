// The kernel-level compute model: kernel lists, the device profile's interpolation, the host,
// and the errors a bad profile gets. Numbers computed by hand from the formulas in
// sim/kernel_profile.cpp and models/kernel_list.cpp (docs/compute-model.md).
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"
#include "toy_profile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using test::error_of;
using test::replace;
using test::toy;
using test::toy_profile;

namespace {

// Every id in validation/data's entry lists.
std::set<std::string> published_ids() {
  std::set<std::string> ids;
  for (const char* f : {"published_kernels.yaml", "published_measurements.yaml"}) {
    std::ifstream in(std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/" + f);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("- id: ", 0) == 0) ids.insert(line.substr(6));
  }
  return ids;
}

}  // namespace

TEST_CASE("a GEMM at a measured point takes the measured time") {
  const auto p = toy();
  // 2 * 4096^3 FLOPs at 100 TFLOP/s; 2 * 8192^3 at 200.
  CHECK(p.gemm_seconds(4096, 4096, 4096) == Approx(2.0 * std::pow(4096.0, 3) / 100e12).epsilon(1e-12));
  CHECK(p.gemm_seconds(8192, 8192, 8192) == Approx(2.0 * std::pow(8192.0, 3) / 200e12).epsilon(1e-12));
  // The shipped A100 profile at its measured 8192^3 point: 253.7 TFLOP/s, scaled by the fitted
  // training factor of the family.
  const auto& a100 = sim::kernel_profile("device-a100-80gb");
  CHECK(a100.gemm_seconds(8192, 8192, 8192) * a100.fitted.tensor_scale ==
        Approx(2.0 * std::pow(8192.0, 3) / 253.7e12).epsilon(1e-9));
}

TEST_CASE("between measured GEMMs the correction comes from the two nearest shapes, weighted by 1/d^2") {
  const auto p = toy();
  // 8192 x 4096 x 8192 is log2-distance sqrt(2) from 4096^3 (correction 0.25) and 1 from 8192^3
  // (0.5): weights 1/2 and 1, correction (0.125 + 0.5) / 1.5 = 0.41667; the model time 2^39 / 400e12
  // (full waves).
  const double f = std::pow(2.0, 39);
  CHECK(p.gemm_correction(8192, 4096, 8192) == Approx(0.625 / 1.5).epsilon(1e-12));
  CHECK(p.gemm_seconds(8192, 4096, 8192) == Approx(f / 400e12 / (0.625 / 1.5)).epsilon(1e-12));
  // Far from both, both still count: 64 x 64 x 128 is d^2 = 97 from 4096^3 and 134 from 8192^3.
  CHECK(p.gemm_correction(64, 64, 128) == Approx((0.25 / 97 + 0.5 / 134) / (1.0 / 97 + 1.0 / 134)).epsilon(1e-12));
  // A skinny GEMM with the FLOPs of the square ones does not pull them: 802816 x 192 x 768 measured
  // at 50 TFLOP/s (2.37e11 FLOPs, between 4096^3 and 8192^3) leaves 8192 x 4096 x 8192 as it was,
  // and a shape like it takes its correction: model 3136 waves x 4 x 128^2 x 2 x 768 / 400e12 =
  // 0.789 ms against 4.735 ms measured, 1/6.
  const auto q = sim::parse_kernel_profile(
      toy_profile("    - {m: 802816, n: 192, k: 768, dtype: bf16, tflops: 50, source: p3}\n"), "toy.yaml");
  CHECK(q.gemm_correction(8192, 4096, 8192) == Approx(0.625 / 1.5).epsilon(1e-12));
  CHECK(q.gemm_correction(802816, 192, 768) == Approx(1.0 / 6).epsilon(1e-9));
  CHECK(q.gemm_correction(802816, 256, 768) < 0.25);
}

TEST_CASE("a GEMM whose tiles leave the last wave partly empty is slower per FLOP") {
  const auto p = toy();
  // 4 SMs, 128 x 128 tiles. m = 512, n = 128: 4 tiles, one full wave. m = 640: 5 tiles, two
  // waves, the second with one tile: twice the model time for 1.25x the FLOPs. (1 wave = 4 x 128^2 x
  // 2 x 4096 / 400e12; each shape over its correction, 0.3477 and 0.3473: from the two measured
  // shapes, d^2 = 34 and 53 for 512 x 128 x 4096.)
  const double wave = 4.0 * 128 * 128 * 2 * 4096 / 400e12;
  const double c512 = p.gemm_correction(512, 128, 4096), c640 = p.gemm_correction(640, 128, 4096);
  CHECK(c512 == Approx((0.25 / 34 + 0.5 / 53) / (1.0 / 34 + 1.0 / 53)).epsilon(1e-12));
  const double full = p.gemm_seconds(512, 128, 4096), partial = p.gemm_seconds(640, 128, 4096);
  CHECK(full == Approx(wave / c512).epsilon(1e-12));
  CHECK(partial == Approx(2 * wave / c640).epsilon(1e-12));
  CHECK(partial / (640.0 * 128 * 4096) == Approx(1.6 * c512 / c640 * full / (512.0 * 128 * 4096)).epsilon(1e-12));
  CHECK(partial / (640.0 * 128 * 4096) > 1.5 * full / (512.0 * 128 * 4096));
  // On the shipped A100 profile (108 SMs): 6912 x 512 fills one wave of 108 tiles of 128 x 256;
  // 7040 x 512 would need a second wave for two more tiles, so the library's best is 440 tiles of
  // 64 x 128 in 5 waves: 5 x 64 x 128 / (128 x 256) = 1.25x the time for 55/54 the FLOPs.
  const auto& a100 = sim::kernel_profile("device-a100-40gb");
  const double one = a100.gemm_seconds(54 * 128, 512, 4096) / (54.0 * 128 * 512 * 4096);
  const double two = a100.gemm_seconds(55 * 128, 512, 4096) / (55.0 * 128 * 512 * 4096);
  const double c54 = a100.gemm_correction(54 * 128, 512, 4096), c55 = a100.gemm_correction(55 * 128, 512, 4096);
  CHECK(two / one == Approx(1.25 * 54 / 55 * c54 / c55).epsilon(1e-9));
  CHECK(two > 1.2 * one);
}

TEST_CASE("memory-bound kernels: log-log between points, a floor below, the last bandwidth above") {
  const auto p = toy();
  // 1 MB in 0.1 us and 1 GB in 10 us: halfway in log bytes (10^7.5) is halfway in log time, 1 us.
  CHECK(p.memory_seconds(std::pow(10.0, 7.5)) == Approx(2e-6));  // ... below the 2 us launch floor
  CHECK(p.memory_seconds(std::pow(10.0, 8.4)) == Approx(std::pow(10.0, -7 + 2.4 * 2.0 / 3)).epsilon(1e-9));
  CHECK(p.memory_seconds(1e3) == Approx(2e-6));   // below the smallest point: its time, then the floor
  CHECK(p.memory_seconds(4e9) == Approx(4e-5));   // above: at the largest point's bandwidth
}

TEST_CASE("attention: FLOPs a causal kernel does, rates by sequence, quadratic at long sequences") {
  models::Kernel k;
  k.kind = models::KernelKind::Attention;
  k.batch_heads = 32, k.seq = 4096, k.head_dim = 128, k.causal = true;
  CHECK(k.flops() == Approx(4.0 * 32 * 4096.0 * 4096 * 128 / 2));
  k.backward = true;
  CHECK(k.flops() == Approx(2.5 * 4.0 * 32 * 4096.0 * 4096 * 128 / 2));

  const auto p = toy();
  // Only fwd+bwd measured, backward/forward rate ratio 0.5: forward runs at R (1 + 2.5 / 0.5) / 3.5,
  // backward at half that. At seq 2048, R is halfway (in log seq) from 100 to 200: 150 TFLOP/s.
  CHECK(p.attention_tflops(models::AttentionKernel::Flash2, false, 2048, 128, true) == Approx(150 * 6 / 3.5));
  CHECK(p.attention_tflops(models::AttentionKernel::Flash2, true, 2048, 128, true) == Approx(150 * 3 / 3.5));
  // The forward and backward times add up to what the fwd+bwd measurement says.
  const double fwd = p.attention_seconds(models::AttentionKernel::Flash2, false, 16, 4096, 128, true);
  const double bwd = p.attention_seconds(models::AttentionKernel::Flash2, true, 16, 4096, 128, true);
  CHECK(fwd + bwd == Approx(3.5 * 4.0 * 16 * 4096.0 * 4096 * 128 / 2 / 200e12));

  // The shipped A100 FlashAttention-2 curve (causal, head dim 128, fwd+bwd: 182 TFLOP/s at 8k,
  // 189 at 16k): doubling the sequence takes 4 x 182 / 189 = 3.85 x the time.
  const auto& a100 = sim::kernel_profile("device-a100-80gb");
  const double t8 = a100.attention_seconds(models::AttentionKernel::Flash2, false, 16, 8192, 128, true);
  const double t16 = a100.attention_seconds(models::AttentionKernel::Flash2, false, 16, 16384, 128, true);
  CHECK(t16 / t8 == Approx(4.0 * 182 / 189).epsilon(1e-9));
}

TEST_CASE("attention: past its last point a causal curve keeps closing its gap to the non-causal one") {
  // Causal fwd+bwd 80 TFLOP/s at 8k and 90 at 16k against a non-causal 100 at both: gaps 20% and
  // 10%, halving per doubling, so 5% at 32k (95 TFLOP/s) and 2.5% at 64k (97.5). Inside the curve,
  // and with no non-causal curve to close in on, as measured (flat past the end).
  auto text = toy_profile("", "{seq: 8192, tflops: 80, source: a}, {seq: 16384, tflops: 90, source: b}");
  text = replace(text, "memory:\n",
                 "    - {kernel: flash2, direction: fwd+bwd, causal: false, head_dim: 128, points: [{seq: 8192, tflops: "
                 "100, source: c}, {seq: 16384, tflops: 100, source: d}]}\nmemory:\n");
  const auto p = sim::parse_kernel_profile(text, "toy.yaml");
  const auto both = [&](double seq) {  // fwd+bwd TFLOP/s from the forward and backward rates
    const double f = p.attention_tflops(models::AttentionKernel::Flash2, false, seq, 128, true);
    const double b = p.attention_tflops(models::AttentionKernel::Flash2, true, seq, 128, true);
    return 3.5 / (1 / f + 2.5 / b);
  };
  CHECK(both(16384) == Approx(90));
  CHECK(both(32768) == Approx(95));
  CHECK(both(65536) == Approx(97.5));
  const auto alone = sim::parse_kernel_profile(
      toy_profile("", "{seq: 8192, tflops: 80, source: a}, {seq: 16384, tflops: 90, source: b}"), "toy.yaml");
  CHECK(alone.attention_tflops(models::AttentionKernel::Flash2, false, 65536, 128, true) ==
        Approx(alone.attention_tflops(models::AttentionKernel::Flash2, false, 16384, 128, true)));
}

TEST_CASE("kernel lists: a Linear's three GEMMs with their real shapes") {
  const auto m = models::preset("mpt-1b");  // hidden 2048, 16 heads, ffn 8192, vocab 50368
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 1024;  // T = 2048 tokens
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *units[1].kernels;
  auto find = [](const std::vector<models::Kernel>& list, const std::string& op) {
    for (const auto& k : list)
      if (k.op == op) return k;
    FAIL("no kernel " << op);
    return models::Kernel{};
  };
  const auto fwd = find(block.forward, "attn.qkv"), dgrad = find(block.backward, "attn.qkv dgrad"),
             wgrad = find(block.backward, "attn.qkv wgrad");
  CHECK(fwd.m == 2048);
  CHECK(fwd.n == 3 * 2048);
  CHECK(fwd.k == 2048);
  CHECK(dgrad.m == 2048);
  CHECK(dgrad.n == 2048);
  CHECK(dgrad.k == 3 * 2048);
  CHECK(wgrad.m == 3 * 2048);
  CHECK(wgrad.n == 2048);
  CHECK(wgrad.k == 2048);
  const auto attn = find(block.forward, "attention");
  CHECK(attn.batch_heads == 2 * 16);
  CHECK(attn.seq == 1024);
  CHECK(attn.head_dim == 128);
  CHECK(attn.causal);
  // The GELU reads and writes T x ffn bf16 elements: 2 * 2 * 2048 * 8192 bytes.
  CHECK(find(block.forward, "gelu").bytes == Approx(2.0 * 2 * 2048 * 8192));
  // The root: the head's GEMM over the vocabulary and the eager fp32 cross-entropy's first pass
  // (logits bf16 in, fp32 out: 6 bytes per logit).
  const auto& root = *units[0].kernels;
  CHECK(find(root.forward, "lm_head").n == 50368);
  CHECK(find(root.forward, "logits to fp32").bytes == Approx(6.0 * 2048 * 50368));
  // Every block shares one list: built once per model, not per unit.
  CHECK(units[1].kernels == units[7].kernels);
}

TEST_CASE("kernel lists: the q/k/v split, the Triton dQ accumulator, metrics on the logits, torchtitan's units") {
  const auto m = models::preset("mpt-1b");  // hidden 2048, fused q/k/v, vocab 50368
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 1024;  // T = 2048 tokens, bf16
  auto bytes_of = [](const std::vector<models::Kernel>& list, const std::string& op) {
    double b = 0;
    int n = 0;
    for (const auto& k : list)
      if (k.op == op) b += k.bytes, ++n;
    return std::make_pair(b, n);
  };
  auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  // The split's backward concatenates dq, dk, dv (T x 3h bf16) into the fused Linear's gradient:
  // read and write 2 * 2048 * 6144 * 2 bytes.
  CHECK(bytes_of(units[1].kernels->backward, "attn.qkv split bwd").first == Approx(2.0 * 2 * 2048 * 6144));
  CHECK(bytes_of(units[1].kernels->forward, "attn.qkv split bwd").second == 0);
  // flash2 has no fp32 dQ accumulator to zero; the Triton kernel zeroes T x h fp32 (4 bytes each).
  CHECK(bytes_of(units[1].kernels->backward, "attention bwd dQ zero").second == 0);
  shape.impl.attention = models::AttentionKernel::FlashTriton;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(bytes_of(units[1].kernels->backward, "attention bwd dQ zero").first == Approx(4.0 * 2048 * 2048));
  // Two metrics on the logits (LLM Foundry's cross-entropy and perplexity): each a log_softmax
  // that reads and writes the T x V bf16 logits, after backward.
  CHECK(bytes_of(units[0].kernels->backward, "metric log_softmax").second == 0);
  shape.impl.logit_metrics = 2;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto metrics = bytes_of(units[0].kernels->backward, "metric log_softmax");
  CHECK(metrics.second == 2);
  CHECK(metrics.first == Approx(2 * 2.0 * 2 * 2048 * 50368));
  // torchtitan's layout has kernel lists too: the embedding, each block, the norm and head.
  models::TrainingShape tt;
  tt.seq_len = 1024;
  const auto llama = models::fsdp_units(models::preset("llama3.1-8b"), models::WrapPolicy::Torchtitan, tt);
  REQUIRE(llama.size() == 32 + 2);
  for (const auto& u : llama) CHECK(u.kernels != nullptr);
  CHECK(bytes_of(llama[0].kernels->forward, "embedding").second == 1);
  CHECK(std::any_of(llama.back().kernels->forward.begin(), llama.back().kernels->forward.end(),
                    [](const models::Kernel& k) { return k.op == "lm_head" && k.n == 128256; }));
  CHECK(llama[1].kernels == llama[32].kernels);
}

TEST_CASE("FSDP1 concatenates a unit's parameter gradients into its flat gradient, FSDP2 does not") {
  auto s = scenarios::parse_scenario(
      "model: mpt-1b\n"
      "cluster: {preset: dgx-a100-ib200, nodes: 1, gpu: a100-40gb}\n"
      "training: {fsdp: 1, micro_batch: 2, seq_len: 1024, param_dtype: bf16, reduce_dtype: bf16}\n"
      "policies: [fsdp]\n",
      "fsdp1.yaml");
  const auto& setup = s.points.at(0).setup;
  const auto& gpu = setup.cluster.gpu;
  const auto& block = setup.units[1];
  const auto own = sim::unit_compute(block, gpu, sim::Dtype::BF16, false, setup.training.impl.attention,
                                     sim::host_cost(setup).kernel_issue_s);
  const auto with_fsdp = sim::unit_compute(setup, 1);
  // SplitWithSizesBackward: read and write the unit's parameters in bf16, one kernel.
  CHECK(with_fsdp.backward_seconds - own.backward_seconds ==
        Approx(sim::memory_kernel_seconds(2.0 * 2 * double(block.params), gpu)).epsilon(1e-12));
  CHECK(with_fsdp.backward_kernels == own.backward_kernels + 1);
  CHECK(with_fsdp.forward_seconds == own.forward_seconds);
}

TEST_CASE("under activation checkpointing the backward runs the forward's kernels again") {
  const auto m = models::preset("llama2-7b");
  models::TrainingShape shape;
  shape.seq_len = 4096;
  const auto plain = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.activation_checkpointing = true;
  shape.impl.checkpoint_early_stop = false;  // reentrant, or PyTorch <= 2.0: the whole block again
  const auto ckpt = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& f = ckpt[3].kernels->forward;
  const auto& b = ckpt[3].kernels->backward;
  REQUIRE(b.size() == f.size() + plain[3].kernels->backward.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    CAPTURE(f[i].op);
    CHECK(b[i].op == f[i].op);
    CHECK(b[i].pass == models::Pass::Recompute);
    CHECK(b[i].flops() == f[i].flops());
    CHECK(b[i].bytes == f[i].bytes);
  }
  CHECK(ckpt[3].kernels->recomputes);
  CHECK(!plain[3].kernels->recomputes);
  // In time: the checkpointed backward is the plain backward plus the forward, exactly.
  const auto gpu = topologies::device("a100-80gb");
  const auto cp = sim::unit_compute(ckpt[3], gpu, sim::Dtype::BF16);
  const auto pl = sim::unit_compute(plain[3], gpu, sim::Dtype::BF16);
  CHECK(cp.backward_seconds == Approx(pl.backward_seconds + pl.forward_seconds).epsilon(1e-12));
  CHECK(cp.backward_kernels == pl.backward_kernels + pl.forward_kernels);
  // PyTorch >= 2.1's early stop: the recompute ends at the down projection's saved input, so the
  // down GEMM and the residual after it run once. The difference is that piece's forward, which the
  // size policy times as a unit of its own.
  shape.impl.checkpoint_early_stop = true;
  const auto early = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& eb = early[3].kernels->backward;
  REQUIRE(eb.size() == f.size() - 2 + plain[3].kernels->backward.size());
  CHECK(eb[f.size() - 3].op == f[f.size() - 3].op);
  CHECK(eb[f.size() - 3].pass == models::Pass::Recompute);
  CHECK(eb[f.size() - 2].pass == models::Pass::Backward);
  CHECK(f[f.size() - 2].op == "mlp.down");
  shape.activation_checkpointing = false;
  const auto by_linear = models::fsdp_units(m, models::WrapPolicy::Size, shape);
  const auto down = std::find_if(by_linear.begin(), by_linear.end(), [](const models::FsdpUnit& u) {
    return u.layer == 2 && u.name.find("mlp.down") != std::string::npos;
  });
  REQUIRE(down != by_linear.end());
  const auto es = sim::unit_compute(early[3], gpu, sim::Dtype::BF16);
  const auto down_fwd = sim::unit_compute(*down, gpu, sim::Dtype::BF16).forward_seconds;
  CHECK(down_fwd > 0);
  CHECK(cp.backward_seconds - es.backward_seconds == Approx(down_fwd).epsilon(1e-9));
  shape.activation_checkpointing = true;
  // Half the blocks under selective checkpointing: every second one recomputes.
  shape.impl.checkpoint_fraction = 0.5;
  const auto half = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(!half[1].kernels->recomputes);  // block 0
  CHECK(half[2].kernels->recomputes);   // block 1
  CHECK(!half[3].kernels->recomputes);
}

TEST_CASE("selective_op: the backward re-runs the even matmuls and the element-wise work, not attention") {
  // torchtitan's op-level policy on Llama 3.1 8B (q, k, v, attention, out, gate, up, down): it keeps
  // the 1st, 3rd, 5th and 7th matmul of a block (q, v, gate, down) and the attention kernel's output,
  // so every block re-runs k, out and up, with the norms, rotary, silu, mul and residual around them.
  const auto m = models::preset("llama3.1-8b");
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 8192;
  shape.activation_checkpointing = true;
  shape.impl.selective_op = true;
  shape.impl.checkpoint_early_stop = false;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  for (int block : {1, 2}) {  // every block, not every second one
    CAPTURE(block);
    const auto& u = *units[std::size_t(block)].kernels;
    REQUIRE(u.recomputes);
    std::vector<std::string> gemms;
    int attention = 0, element_wise = 0, element_wise_fwd = 0;
    for (const auto& k : u.backward) {
      if (k.pass != models::Pass::Recompute) continue;
      if (k.kind == models::KernelKind::Gemm) gemms.push_back(k.op);
      attention += k.kind == models::KernelKind::Attention;
      element_wise += k.kind == models::KernelKind::Memory;
    }
    for (const auto& k : u.forward) element_wise_fwd += k.kind == models::KernelKind::Memory;
    CHECK(gemms == std::vector<std::string>{"attn.k", "attn.out", "mlp.up"});
    CHECK(attention == 0);
    CHECK(element_wise == element_wise_fwd);
  }
  // In FLOPs: T (2 h kv + 2 h h + 2 h f) re-run, per token 2 * 4096 * (1024 + 4096 + 14336).
  shape.activation_checkpointing = false;
  shape.impl.selective_op = false;
  const auto plain = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  const double T = 2 * 8192;
  CHECK(units[1].backward_flops - plain[1].backward_flops == Approx(T * 2 * 4096.0 * (1024 + 4096 + 14336)));
}

TEST_CASE("a toy model of tiny kernels is bound by the host, a large one by the GPU") {
  const auto gpu = topologies::device("h100-sxm");
  const auto& prof = sim::kernel_profile("device-h100-sxm");
  // 2 layers of hidden 64, 64 tokens: every kernel is a launch floor, far shorter than the
  // CPU's issue cost per kernel.
  models::TransformerConfig toy;
  toy.name = "toy";
  toy.layers = 2, toy.hidden = 64, toy.heads = 2, toy.kv_heads = 2, toy.ffn = 256, toy.vocab = 128,
  toy.seq_len = 64;
  models::TrainingShape shape;
  const auto tiny = models::fsdp_units(toy, models::WrapPolicy::Block, shape);
  const auto t = sim::unit_compute(tiny[1], gpu, sim::Dtype::BF16, false, models::AttentionKernel::Flash2,
                                   prof.issue_seconds);
  CHECK(t.forward_issue_seconds == Approx(t.forward_kernels * prof.issue_seconds));
  CHECK(t.forward_seconds == Approx(t.forward_kernels * prof.min_kernel_seconds).epsilon(0.05));
  CHECK(t.forward_issue_seconds > 2 * t.forward_seconds);
  CHECK(t.backward_issue_seconds > 2 * t.backward_seconds);
  // Llama-2 70B, 4096 tokens: the GPU's work dwarfs the issuing.
  shape.seq_len = 4096;
  const auto big = models::fsdp_units(models::preset("llama2-70b"), models::WrapPolicy::Block, shape);
  const auto g = sim::unit_compute(big[1], gpu, sim::Dtype::BF16, false, models::AttentionKernel::Flash2,
                                   prof.issue_seconds);
  CHECK(g.forward_seconds > 20 * g.forward_issue_seconds);
  CHECK(g.backward_seconds > 20 * g.backward_issue_seconds);
}

TEST_CASE("in the replayed step, the host stream bounds a toy model and the GPU a large one") {
  // One H100, so that no collective hides anything: the step is the host stream or the compute
  // stream, whichever is longer.
  auto step = [](const std::string& model, int seq) {
    const auto s = scenarios::parse_scenario(
        fmt::format("model: {}\ncluster: {{preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 1}}\n"
                    "training: {{micro_batch: 1, seq_len: {}}}\npolicies: [fsdp]\n",
                    model, seq),
        "host.yaml");
    return sim::simulate_fsdp(s.points[0].setup);
  };
  // A toy of hidden 64 at 64 tokens: every kernel is a launch floor, far shorter than its issue cost.
  const auto toy = step("{layers: 4, hidden: 64, heads: 2, ffn: 256, vocab: 128, seq_len: 64}", 64);
  double issue = 0, kernels = 0;
  for (int u = 0; u < int(toy.schedule.tasks.size()); ++u)
    if (toy.schedule.tasks[u].stream == sim::Stream::Host) issue += toy.replay.timings[u].end - toy.replay.timings[u].start;
  kernels = toy.breakdown.compute_s + toy.breakdown.optimizer_s;
  CHECK(toy.breakdown.host_s == Approx(issue));
  CHECK(issue > 2 * kernels);                             // the GPU idles most of the step
  CHECK(toy.step_time_s >= issue);                        // and the step is the host's
  CHECK(toy.step_time_s < issue + kernels);
  // Llama-2 7B at 4096 tokens: the GPU's work dwarfs the issuing, and the step is the GPU's.
  const auto big = step("llama2-7b", 4096);
  CHECK(big.breakdown.host_s < 0.05 * big.step_time_s);
  CHECK(big.step_time_s == Approx(big.breakdown.compute_s + big.breakdown.optimizer_s).epsilon(0.02));
}

TEST_CASE("MFU two ways: causal attention as the kernel runs it, and Megatron's 6N + 12 L h s") {
  const auto s = scenarios::parse_scenario(
      "model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining: {micro_batch: 1, seq_len: 4096}\n"
      "policies: [fsdp]\n", "m.yaml");
  const auto& setup = s.points[0].setup;
  const double ours = sim::kernel_flops_per_token(setup), megatron = models::model_flops_per_token(setup.model);
  // Ours: 6 x the GEMM weights (blocks and head) plus attention at 2 s h per layer forward (causal)
  // and 2.5x that backward: 7 s h per layer per token.
  const auto& m = setup.model;
  const double gemm_weights = double(models::parameter_count(m)) - 32000.0 * 4096 - 4096 * (2 * 32 + 1);
  CHECK(ours == Approx(6 * gemm_weights + 7.0 * 32 * 4096 * 4096).epsilon(1e-9));
  CHECK(megatron == Approx(6 * (gemm_weights + 4096 * (2 * 32 + 1)) + 12.0 * 32 * 4096 * 4096).epsilon(1e-9));
  const auto r = scenarios::run(s);
  CHECK(r[0].step.mfu / r[0].step.mfu_megatron == Approx(ours / megatron));
}

TEST_CASE("bad profiles: a missing field, a curve that is not monotonic, a device it cannot serve") {
  CHECK_NOTHROW(toy());
  CHECK(error_of(replace(toy_profile(), "  k_overhead: 0\n", "")) ==
        "bad.yaml:8: gemm: missing required key 'k_overhead'");
  CHECK(error_of(toy_profile("", "{seq: 4096, tflops: 100, source: a}, {seq: 1024, tflops: 200, source: b}"))
            .find("bad.yaml:20: attention.curves[0].points[1].seq: not monotonic: sequence length 1024 after 4096") !=
        std::string::npos);
  // A rate that grows faster than the sequence would make longer sequences cheaper per token.
  CHECK(error_of(toy_profile("", "{seq: 1024, tflops: 100, source: a}, {seq: 2048, tflops: 300, source: b}"))
            .find("not monotonic: 300 TFLOP/s at seq 2048") != std::string::npos);
  CHECK(error_of(replace(toy_profile(), "{bytes: 1000000000, GBps: 1000", "{bytes: 100, GBps: 1000"))
            .find("memory.points[1].bytes: not monotonic") != std::string::npos);
  CHECK(error_of(toy_profile("    - {m: 4096, n: 4096, k: 4096, dtype: bf16, tflops: 90, source: p3}\n"))
            .find("measured twice") != std::string::npos);
  CHECK(error_of(replace(toy_profile(), "source: p1", "source: ''")).find("gemm.points[0].source") != std::string::npos);
  CHECK(error_of(replace(toy_profile(), "tagcsim-device-profile/1", "v2")).find("bad.yaml:1: format") !=
        std::string::npos);
  // The A100 profile given to an H100: refused, naming both.
  auto h100 = topologies::device("h100-sxm");
  h100.profile = "device-a100-80gb";
  CHECK_THROWS_WITH_AS(sim::device_kernel_profile(h100), Contains("device-a100-80gb.yaml:6: gpu: kernel profile "
                                                                 "'device-a100-80gb' is for A100-SXM4-80GB, it cannot "
                                                                 "serve the GPU 'H100-SXM5-80GB'"),
                       InputError);
  // From a scenario, the cluster's key is named too.
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nodes: 1\n"
                                                 "  gpu: {profile: device-a100-80gb}\npolicies: [fsdp]\n", "s.yaml"),
                       Contains("s.yaml:3: cluster: "), InputError);
  // An attention kernel the profile has no curves for: the scenario's key is blamed.
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\n"
                                "training:\n  attention: flash3\npolicies: [fsdp]\n", "s.yaml"),
      Contains("s.yaml:4: training.attention: "), InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\n"
                                "training:\n  attention: flash3\npolicies: [fsdp]\n", "s.yaml"),
      Contains("no curves for the 'flash3' attention kernel"), InputError);
  CHECK_THROWS_WITH_AS(sim::kernel_profile("device-nope"), Contains("no such kernel profile"), InputError);
  // The training keys that pick the kernels.
  auto training = [](const std::string& t) {
    return scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining:\n  " +
                                         t + "\npolicies: [fsdp]\n", "k.yaml");
  };
  CHECK_THROWS_WITH_AS(training("attention: flash4"),
                       Contains("k.yaml:4: training.attention: unknown attention kernel 'flash4'"), InputError);
  CHECK_THROWS_WITH_AS(training("activation_checkpointing: 1.5"),
                       Contains("k.yaml:4: training.activation_checkpointing: expected true, false, selective_op or the share"),
                       InputError);
  CHECK_THROWS_WITH_AS(training("cross_entropy: fast"), Contains("k.yaml:4: training.cross_entropy"), InputError);
  CHECK(training("activation_checkpointing: 0.25").points[0].setup.training.impl.checkpoint_fraction == 0.25);
}

TEST_CASE("every shipped profile loads, names its GPU and cites published entries") {
  const auto ids = published_ids();
  REQUIRE(ids.size() > 400);
  const auto shipped = sim::shipped_kernel_profiles();
  CHECK(shipped == std::vector<std::string>{"device-a100-40gb", "device-a100-80gb", "device-b200", "device-h100-sxm",
                                            "device-h200-sxm"});
  auto cites = [&](const std::string& source) {
    for (const auto& id : ids)
      if (source.find(id) != std::string::npos) return true;
    return false;
  };
  for (const auto& name : shipped) {
    CAPTURE(name);
    const auto& p = sim::kernel_profile(name);
    CHECK(p.name == name);
    for (const char* key : {"gpu_name", "clocks", "driver", "cuda", "cublas", "cudnn", "measured_by"})
      CHECK(!p.metadata.at(key).empty());
    for (const auto& g : p.gemm.points) CHECK(cites(g.source));
    for (const auto& c : p.attention.curves)
      for (const auto& pt : c.points) CHECK(cites(pt.source));
    for (const auto& m : p.memory) CHECK(cites(m.source));
  }
  // The presets pick their profile by device.
  CHECK(topologies::device("a100-40gb").profile == "device-a100-40gb");
  CHECK(topologies::device("h200-sxm").profile == "device-h200-sxm");
  CHECK(sim::device_kernel_profile(topologies::device("v100-32gb")) == nullptr);  // no published kernels
}
