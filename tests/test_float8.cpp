// Float8 Linears (torchao's tensorwise recipe): float8 GEMMs timed from a profile's float8 points,
// the casts in the kernel lists, float8 all-gather's bytes, and the inputs float8 refuses. Numbers
// computed by hand from sim/kernel_profile.cpp and models/kernel_list.cpp (docs/compute-model.md).
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/schedule_program.hpp"
#include "sim/step.hpp"
#include "toy_profile.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace tagcsim;
using namespace tagcsim::scenarios;
using namespace tagcsim::test;  // the toy profile and its helpers
using doctest::Approx;
using doctest::Contains;

namespace {
// Llama 2 7B on 4 DGX H100 nodes; a test's extra training keys start at line 7.
Scenario parse(const std::string& extra) {
  return parse_scenario("name: t\nmodel: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 4}\ntraining:\n"
                        "  micro_batch: 2\n  seq_len: 4096\n" + extra, "t.yaml");
}
}  // namespace

TEST_CASE("float8 GEMMs: peak.fp8, one byte per input, corrected by the float8 points") {
  // The toy at peak.fp8 800 TFLOP/s with 8192^3 measured in float8 at 600 (correction 0.75).
  const auto text = replace(toy_profile("    - {m: 8192, n: 8192, k: 8192, dtype: fp8, tflops: 600, source: p3}\n"),
                            "fp32: 50 TFLOP/s,", "fp32: 50 TFLOP/s, fp8: 800 TFLOP/s,");
  const auto p = sim::parse_kernel_profile(text, "toy.yaml");
  const double f = 2.0 * std::pow(8192.0, 3);
  // At its measured point the measured time; the bf16 GEMM of that shape keeps its own (200).
  CHECK(p.fp8_gemm_seconds(8192, 8192, 8192) == Approx(f / 600e12).epsilon(1e-12));
  CHECK(p.gemm_seconds(8192, 8192, 8192) == Approx(f / 200e12).epsilon(1e-12));
  // Anywhere else the only float8 point's correction: 4096^3 models at 2 * 4096^3 / 800e12.
  CHECK(p.fp8_gemm_seconds(4096, 4096, 4096) == Approx(2.0 * std::pow(4096.0, 3) / 800e12 / 0.75).epsilon(1e-12));
  // A float8 kernel in a list is timed as float8.
  models::Kernel k;
  k.kind = models::KernelKind::Gemm;
  k.m = k.n = k.k = 8192;
  k.fp8 = true;
  CHECK(p.kernel_seconds(k, models::AttentionKernel::Flash2) == Approx(f / 600e12).epsilon(1e-12));
  // Without float8 points the 16-bit corrections apply: 0.5 at 8192^3.
  const auto no_points = sim::parse_kernel_profile(
      replace(toy_profile(), "fp32: 50 TFLOP/s,", "fp32: 50 TFLOP/s, fp8: 800 TFLOP/s,"), "toy.yaml");
  CHECK(no_points.fp8_gemm_seconds(8192, 8192, 8192) == Approx(f / 800e12 / 0.5).epsilon(1e-12));
  // A profile without peak.fp8 cannot time one, and says so; a float8 point needs the peak.
  CHECK_THROWS_WITH(toy().fp8_gemm_seconds(8192, 8192, 8192), Contains("no float8 rate (peak.fp8)"));
  CHECK(error_of(toy_profile("    - {m: 8192, n: 8192, k: 8192, dtype: fp8, tflops: 600, source: p3}\n")) ==
        "bad.yaml:16: gemm.points[2].dtype: an fp8 point needs the profile's peak.fp8 (the datasheet's dense float8 rate)");
  // The shipped H100 profile: Azure's cuBLASLt float8 8192^3 at 1290.1 TFLOP/s, before the fitted scale.
  const auto& h100 = sim::kernel_profile("device-h100-sxm");
  CHECK(h100.fp8_gemm_seconds(8192, 8192, 8192) * h100.fitted.tensor_scale == Approx(f / 1290.1e12).epsilon(1e-9));
}

TEST_CASE("float8 Linears: float8 GEMMs, the casts torchao runs, fewer and shared ones when compiled") {
  const auto m = models::preset("llama3.1-8b");  // hidden 4096, kv 1024, ffn 14336
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 1024;  // T = 1024 tokens, e = 2 bytes
  shape.impl.float8_linears = true;
  auto kernels = [&](const models::TrainingShape& s) {
    return models::fsdp_units(m, models::WrapPolicy::Block, s)[1].kernels;  // a block
  };
  auto bytes = [](const std::vector<models::Kernel>& list, const std::string& op) {
    double b = 0;
    int n = 0;
    for (const auto& k : list)
      if (k.op == op) b += k.bytes, ++n;
    return std::pair{b, n};
  };
  const double T = 1024, h = 4096, f = 14336, e = 2;
  {  // eager: every Linear casts its own input, op by op as torchao runs it
    const auto block = kernels(shape);
    for (const auto& k : block->forward)
      if (k.kind == models::KernelKind::Gemm) CHECK(k.fp8);
    // mlp.down (in f, out h) forward: amax of x, torch.max(torch.abs(x)): abs reads and writes e T f,
    // max reads e T f; four scalar kernels make the scale.
    CHECK(bytes(block->forward, "mlp.down fp8 amax input abs").first == Approx(2 * e * T * f));
    CHECK(bytes(block->forward, "mlp.down fp8 amax input").first == Approx(e * T * f));
    CHECK(bytes(block->forward, "mlp.down fp8 scale input").second == 4);
    // The cast, x.to(float32) * scale, clamp, .to(float8): (e + 4), 8, 8 and 5 bytes an element.
    CHECK(bytes(block->forward, "mlp.down fp8 cast input to fp32").first == Approx((e + 4) * T * f));
    CHECK(bytes(block->forward, "mlp.down fp8 cast input scale").first == Approx(8 * T * f));
    CHECK(bytes(block->forward, "mlp.down fp8 cast input clamp").first == Approx(8 * T * f));
    CHECK(bytes(block->forward, "mlp.down fp8 cast input").first == Approx(5 * T * f));
    CHECK(bytes(block->forward, "mlp.down fp8 cast weight").first == Approx(5 * h * f));
    // Backward: the output gradient cast twice, each with its own amax (dgrad, then wgrad).
    CHECK(bytes(block->backward, "mlp.down fp8 cast grad_output") == std::pair{2 * 5 * T * h, 2});
    CHECK(bytes(block->backward, "mlp.down fp8 amax grad_output").second == 2);
    // And x and W again; _scaled_mm wants its second operand column-major and its first row-major:
    // W for dgrad, g and x for wgrad are each copied transposed (a byte read, a byte written).
    CHECK(bytes(block->backward, "mlp.down fp8 cast input").first == Approx(5 * T * f));
    CHECK(bytes(block->backward, "mlp.down fp8 weight transpose").first == Approx(2 * h * f));
    CHECK(bytes(block->backward, "mlp.down fp8 grad_output transpose").first == Approx(2 * T * h));
    CHECK(bytes(block->backward, "mlp.down fp8 input transpose").first == Approx(2 * T * f));
    CHECK(bytes(block->forward, "attn.k fp8 cast input").second == 1);
  }
  {  // compiled (torchao's roofline): x cast once into both layouts, W forward and again in backward
    shape.impl.compiled = true;
    const auto block = kernels(shape);
    CHECK(bytes(block->forward, "mlp.down fp8 cast input").first == Approx((e + 2) * T * f));
    CHECK(bytes(block->backward, "mlp.down fp8 cast input").second == 0);
    CHECK(bytes(block->backward, "mlp.down fp8 amax weight").second == 0);  // the forward's amax
    CHECK(bytes(block->backward, "mlp.down fp8 cast weight").first == Approx((e + 1) * h * f));
  }
  {  // compiled, float8 all-gather: k, v and up reuse the cast of q's and gate's input
    shape.impl.float8_all_gather = true;
    const auto block = kernels(shape);
    CHECK(bytes(block->forward, "attn.k fp8 cast input").second == 0);
    CHECK(bytes(block->forward, "mlp.up fp8 amax input").second == 0);
    CHECK(bytes(block->forward, "mlp.gate fp8 cast input").first == Approx((e + 2) * T * h));
    CHECK(bytes(block->forward, "mlp.gate fp8 cast weight").second == 0);  // all-gathered in float8
    // One cast writes both layouts of the output gradient: e in, 2 x 1 out.
    CHECK(bytes(block->backward, "mlp.gate fp8 cast grad_output") == std::pair{(e + 2) * T * f, 1});
    CHECK(bytes(block->backward, "mlp.gate fp8 weight transpose").first == Approx(2 * f * h));
  }
  // The output head stays in bf16 (torchtitan's filter_fqns: ["output"]).
  for (const auto& k : models::fsdp_units(m, models::WrapPolicy::Block, shape)[0].kernels->forward)
    if (k.op == "lm_head") CHECK(!k.fp8);
}

TEST_CASE("float8: FSDP2's float8 all-gather moves the blocks' Linear weights in one byte each") {
  // The loss eager (compile_loss: false): its fp32 log-softmax sets both runs' peak at the loss,
  // where they hold the same units gathered.
  const auto base = parse("  fsdp: 2\n  compile: true\n  compile_loss: false\n  float8: true\n");
  const auto f8ag =
      parse("  fsdp: 2\n  compile: true\n  compile_loss: false\n  float8: true\n  float8_all_gather: true\n");
  const auto& setup = base.points[0].setup;
  const auto& block = setup.units[1];  // Llama 2 7B: 4 x 4096^2 attention, 3 x 4096 x 11008 MLP, 2 norms
  CHECK(block.attention_params == 4LL * 4096 * 4096);
  CHECK(block.mlp_params == 3LL * 4096 * 11008);
  CHECK(sim::detail::all_gather_bytes(setup, block) == doctest::Approx(2.0 * block.params));
  CHECK(sim::detail::all_gather_bytes(f8ag.points[0].setup, block) ==
        doctest::Approx(2.0 * block.params - double(block.attention_params + block.mlp_params)));
  // The root (embedding, final norm, head) is not converted.
  CHECK(sim::detail::all_gather_bytes(f8ag.points[0].setup, setup.units[0]) == doctest::Approx(2.0 * setup.units[0].params));
  // The all-gathers carry those bytes, and the unsharded weights keep them: the gathered
  // parameters at the peak shrink by one byte per Linear parameter of the units then gathered.
  const auto plain = sim::simulate_fsdp(setup), f8 = sim::simulate_fsdp(f8ag.points[0].setup);
  // 32 blocks gathered in forward and again in backward: 64 all-gathers one byte lighter per
  // Linear parameter (the root, kept unsharded after forward, once and unchanged).
  CHECK(f8.collectives.at("all_gather").bytes ==
        doctest::Approx(plain.collectives.at("all_gather").bytes - 64 * double(block.attention_params + block.mlp_params)));
  CHECK(f8.memory.gathered_params_bytes < plain.memory.gathered_params_bytes);
  const double per_block = double(block.attention_params + block.mlp_params);
  CHECK(std::fmod(plain.memory.gathered_params_bytes - f8.memory.gathered_params_bytes, per_block) ==
        doctest::Approx(0).epsilon(1e-6).scale(per_block));
}

TEST_CASE("bad input: float8 where it cannot run") {
  CHECK_THROWS_WITH_AS(parse("  float8_all_gather: true\n"),
                       doctest::Contains("t.yaml:7: training.float8_all_gather: float8 all-gather needs float8 Linears"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  fsdp: 1\n  float8: true\n  float8_all_gather: true\n"),
                       doctest::Contains("t.yaml:9: training.float8_all_gather: torchao's float8 all-gather works with "
                                         "FSDP2 (fully_shard) only"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining:\n  float8: true\n", "t.yaml"),
      doctest::Contains("t.yaml:4: training.float8: the GPU 'A100-SXM4-80GB' has a kernel profile"), InputError);
}
