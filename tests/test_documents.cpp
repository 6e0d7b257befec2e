// Documents packed into each sequence, each attending only within itself (training.document_length:
// torchtitan's block-causal masking), and FlexAttention, the kernel torchtitan runs it with. Numbers
// by hand from the toy profile (tests/toy_profile.hpp) and the shipped curves (docs/compute-model.md,
// "Documents and FlexAttention").
#include "kernel_list_testing.hpp"
#include "toy_profile.hpp"

#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "sim/step.hpp"
#include "sim/kernel_profile.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using models::AttentionKernel;

namespace {

scenarios::Scenario scenario(const std::string& training, const std::string& cluster = "dgx-h100-ib400") {
  return scenarios::parse_scenario("model: llama3.1-8b\ncluster: {preset: " + cluster + ", nodes: 1}\ntraining:\n" +
                                       training + "policies: [fsdp]\n",
                                   "d.yaml");
}

double step_seconds(const std::string& training) {
  return sim::simulate_fsdp(scenario(training).points.at(0).setup).step_time_s;
}

}  // namespace

TEST_CASE("documents: a query attends to its own document's prefix, d/2 keys on average") {
  models::Kernel k;
  k.kind = models::KernelKind::Attention;
  k.batch_heads = 32, k.seq = 8192, k.head_dim = 128, k.causal = true;
  k.document = 1024;  // 8 documents a sequence
  CHECK(k.flops() == Approx(4.0 * 32 * 8192 * 128 * 1024 / 2));
  k.backward = true;
  CHECK(k.flops() == Approx(2.5 * 4.0 * 32 * 8192 * 128 * 1024 / 2));
  // A document as long as the sequence, or longer, is the causal sequence.
  k.backward = false, k.document = 8192;
  CHECK(k.flops() == Approx(4.0 * 32 * 8192.0 * 8192 * 128 / 2));
  k.document = 20000;
  CHECK(k.flops() == Approx(4.0 * 32 * 8192.0 * 8192 * 128 / 2));
}

TEST_CASE("documents: timed as seq / d causal sequences of d tokens, FlexAttention's as d + 128") {
  // The toy's one curve: flash2 causal fwd+bwd, 100 TFLOP/s at 1024 tokens, 200 at 4096; forward
  // runs at R (1 + 2.5 / 0.5) / 3.5 with the backward/forward ratio 0.5 (test_compute.cpp).
  const auto flex_curve = "    - {kernel: flex, direction: fwd+bwd, causal: true, head_dim: 128, points: "
                          "[{seq: 1024, tflops: 100, source: a}, {seq: 4096, tflops: 200, source: b}]}\n";
  const auto p = sim::parse_kernel_profile(
      test::replace(test::toy_profile(), "memory:\n", std::string(flex_curve) + "memory:\n"), "toy.yaml");
  // flash-attn's varlen call: 16 x 8192 / 1024 = 128 sequences of 1024 tokens at 100 x 6 / 3.5 TFLOP/s.
  const double varlen = p.attention_seconds(AttentionKernel::Flash2, false, 16, 8192, 128, true, 0, 1, 1024);
  CHECK(varlen == Approx(4.0 * 128 * 1024 * 512 * 128 / (100e12 * 6 / 3.5)));
  // The same documents under FlexAttention's 128 x 128 block mask: 128 sequences of 1152 tokens,
  // at the curve's rate at 1152 tokens, 100 + 100 x log2(1152 / 1024) / 2 TFLOP/s (linear in log seq
  // from 100 at 1024 to 200 at 4096, two doublings).
  const double rate_1152 = (100e12 + 100e12 * std::log2(1152.0 / 1024) / 2) * 6 / 3.5;
  const double flex = p.attention_seconds(AttentionKernel::Flex, false, 16, 8192, 128, true, 0, 1, 1024);
  CHECK(flex == Approx(4.0 * 128 * 1152 * 576 * 128 / rate_1152));
  CHECK(flex > varlen);
  // Against the whole causal sequence, at 200 x 6 / 3.5: eight documents do 1/8 of the work at half the rate.
  const double whole = p.attention_seconds(AttentionKernel::Flash2, false, 16, 8192, 128, true);
  CHECK(whole == Approx(4.0 * 16 * 8192 * 4096 * 128 / (200e12 * 6 / 3.5)));
  CHECK(varlen / whole == Approx(0.25));
  // Within a 512-token window inside 1024-token documents: the window's keys, at the rate of 512.
  const double windowed = p.attention_seconds(AttentionKernel::Flash2, false, 16, 8192, 128, true, 512, 1, 1024);
  CHECK(windowed == Approx(4.0 * 128 * 1024 * (512 - 512.0 * 512 / 2048) * 128 / (100e12 * 6 / 3.5)));
}

TEST_CASE("FlexAttention's shipped curves: FlashAttention-2's times the published ratios") {
  // H100 (the GTC 2025 abstract): forward ~1.25x FlashAttention-2's, backward ~1.03x; FA2's causal
  // head-dim-128 forward at 16k tokens is K03's 335 TFLOP/s (validation/data/published_kernels.yaml).
  const auto& h100 = sim::kernel_profile("device-h100-sxm");
  for (double seq : {2048.0, 16384.0}) {
    CAPTURE(seq);
    CHECK(h100.attention_tflops(AttentionKernel::Flex, false, seq, 128, true) ==
          Approx(1.25 * h100.attention_tflops(AttentionKernel::Flash2, false, seq, 128, true)).epsilon(2e-3));
  }
  CHECK(h100.attention_tflops(AttentionKernel::Flash2, false, 16384, 128, true) == Approx(335));
  // A100 (PyTorch's FlexAttention blog): 0.90 forward, 0.85 backward; only fwd+bwd curves are
  // published there, so the pair reads (1 + 2.5 / rho) / (1 / 0.90 + 2.5 / (0.85 rho)) of FA2's.
  const auto& a100 = sim::kernel_profile("device-a100-80gb");
  const double rho = a100.attention.bwd_fwd_rate_ratio;
  const double pair = (1 + 2.5 / rho) / (1 / 0.90 + 2.5 / (0.85 * rho));
  const double fa2 = a100.attention_seconds(AttentionKernel::Flash2, false, 16, 8192, 128, true) +
                     a100.attention_seconds(AttentionKernel::Flash2, true, 16, 8192, 128, true);
  const double flex = a100.attention_seconds(AttentionKernel::Flex, false, 16, 8192, 128, true) +
                      a100.attention_seconds(AttentionKernel::Flex, true, 16, 8192, 128, true);
  CHECK(fa2 / flex == Approx(pair).epsilon(2e-3));
  // The B200 profile has no FlexAttention measurement: a run asking for it hears so.
  CHECK_THROWS_WITH_AS(scenario("  attention: flex\n", "dgx-b200-ib400"), Contains("has no curves for the 'flex' attention kernel"),
                       InputError);
}

TEST_CASE("documents in the kernel lists: varlen and FlexAttention read the shared K and V heads, unless repeat_kv says") {
  const auto m = models::preset("llama3.1-8b");  // 32 heads, 8 KV heads of 128
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 4096;  // T = 4096 tokens
  const auto sdpa = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  CHECK(test::count_prefix(sdpa.forward, "repeat_kv") == 1);
  CHECK(test::count_prefix(sdpa.forward, "attention out transpose") == 1);
  CHECK(test::find(sdpa.forward, "attention").document == 0);

  shape.impl.attention = AttentionKernel::Flash2;
  shape.impl.document_length = 512;
  const auto varlen = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  CHECK(test::count_prefix(varlen.forward, "repeat_kv") == 0);
  // torchtitan's varlen wrapper takes the (batch, heads, seq, head dim) layout and transposes back.
  CHECK(test::find(varlen.forward, "attention out transpose").bytes == Approx(2.0 * 2 * 4096 * 4096));
  CHECK(test::find(varlen.forward, "attention").document == 512);
  // 4 x 32 heads x 4096 x 128 x 512 / 2 FLOPs forward.
  CHECK(test::find(varlen.forward, "attention").flops() == Approx(4.0 * 32 * 4096 * 128 * 256));

  shape.impl.attention = AttentionKernel::Flex;
  const auto flex = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  CHECK(test::count_prefix(flex.forward, "repeat_kv") == 0);  // enable_gqa
  CHECK(test::find(flex.forward, "attention out transpose").bytes == Approx(2.0 * 2 * 4096 * 4096));
  // torchtitan before #2259 repeated them for every backend: K and V, 2 bytes x T x (1024 read +
  // 4096 written) each.
  shape.impl.repeat_kv = true;
  const auto repeated = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  CHECK(test::find(repeated.forward, "repeat_kv").bytes == Approx(2.0 * 2 * 4096 * (1024 + 4096)));
  // ... and SDPA with enable_gqa after it reads them shared.
  shape.impl.attention = AttentionKernel::Flash2;
  shape.impl.document_length = 0;
  shape.impl.repeat_kv = false;
  CHECK(test::count_prefix((*models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels).forward, "repeat_kv") ==
        0);
  // The units count the same FLOPs for MFU: the out projection's unit carries the attention core.
  shape.impl.attention = AttentionKernel::Flex;
  shape.impl.repeat_kv.reset();
  shape.impl.document_length = 512;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.impl.document_length = 0;
  const auto whole = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(whole[1].forward_flops - units[1].forward_flops == Approx(4.0 * 32 * 4096 * 128 * (2048 - 256)));
}

TEST_CASE("documents: shorter documents make a long-sequence step faster, and say so in the report") {
  const std::string base = "  framework: torchtitan\n  seq_len: 8192\n  attention: flex\n";
  const double whole = step_seconds(base);
  const double docs = step_seconds(base + "  document_length: 1024\n");
  CHECK(docs < whole);
  const auto s = scenario(base + "  document_length: 1024\n");
  CHECK(s.points.at(0).setup.training.impl.document_length == 1024);
  const auto report = scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
  CHECK_MESSAGE(report.find("documents of 1024 tokens packed into each sequence") != std::string::npos, report);
  const auto kernels = scenarios::kernel_table(s.points.at(0).setup);
  CHECK_MESSAGE(kernels.find("32 seqs x 8192 x d128 causal kv8 in 1024-token documents") != std::string::npos, kernels);
}

TEST_CASE("bad input: documents need a kernel that takes their boundaries") {
  CHECK_THROWS_WITH_AS(scenario("  attention: cudnn\n  document_length: 1024\n"),
                       Contains("d.yaml:5: training.document_length: documents need an attention kernel that takes "
                                "their boundaries: flex"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  document_length: 0\n"), Contains("d.yaml:4: training.document_length"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  attention: flex\n  document_length: 1e-300\n"),
                       Contains("d.yaml:5: training.document_length: expected a document length in tokens, from 1 to "
                                "1e9, got 1e-300"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  document_lenght: 1024\n"), Contains("d.yaml:4"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  context_parallel: 2\n  seq_len: 8192\n  document_length: 1024\n"),
                       Contains("d.yaml:6: training.document_length: context parallelism with documents is not modelled"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  unpadded_attention: true\n  document_length: 1024\n"),
                       Contains("d.yaml:5: training.document_length: LLM Foundry's unpadded path"), InputError);
  CHECK(scenario("  attention: flash3\n  document_length: 1024\n").points.at(0).setup.training.impl.document_length ==
        1024);
}
