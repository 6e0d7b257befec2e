// gpt-oss's experts and attention as torchtitan's gpt_oss runs them (model keys expert_bias,
// swiglu_limit, attention_sinks), and what torchtitan's MoE code of 2026 does around them
// (training.compile_moe, training.router_fp32): the kernels eager PyTorch launches and what a
// compiled block leaves, their bytes by hand from a toy shape, the parameters they add, bad input.
#include "kernel_list_testing.hpp"
#include "toy_profile.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using doctest::Contains;
using test::count_prefix;
using test::find;

namespace {

// A toy gpt-oss: hidden 64, 4 heads of 16 over 2 KV heads, 4 experts of 32 (2 a token) with biases
// and the clamped SwiGLU, attention sinks; one sequence of 64 tokens: 128 expert rows, n = 128 x 32
// = 4,096 SwiGLU elements, q 64 wide, the log-sum-exp 4 heads x 64 tokens.
models::TransformerConfig toy(bool gpt_oss = true) {
  models::TransformerConfig m;
  m.name = "toy-oss";
  m.layers = 2, m.hidden = 64, m.heads = 4, m.kv_heads = 2, m.head_dim = 16, m.ffn = 32;
  m.experts = 4, m.experts_per_token = 2, m.gated_mlp = true, m.vocab = 128, m.seq_len = 64;
  m.norm = models::Norm::RMSNorm, m.qkv_bias = true;
  m.expert_bias = m.attention_sinks = gpt_oss;
  m.swiglu_limit = gpt_oss ? 7.0 : 0;
  models::validate(m, "toy");
  return m;
}

const models::UnitKernels& block_kernels(const models::TransformerConfig& m, bool compiled) {
  static std::vector<models::FsdpUnit> keep[4];
  models::TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 64, shape.activation_bytes = 2;
  shape.impl.compiled = compiled;
  auto& units = keep[(m.expert_bias ? 2 : 0) + (compiled ? 1 : 0)];
  units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  REQUIRE(units.at(1).kind == models::UnitKind::Block);
  return *units.at(1).kernels;
}

constexpr double e = 2, R = 128, f = 32, h = 64, n = R * f, q = 64, lse = 4 * 64;

}  // namespace

TEST_CASE("gpt-oss eager: one grouped GEMM of gate and up interleaved, each bias gathered to its rows and added") {
  const auto& k = block_kernels(toy(), false);
  const auto mlp1 = find(k.forward, "mlp.experts.mlp1 (grouped)");
  CHECK(mlp1.m == R);
  CHECK(mlp1.n == 2 * f);
  CHECK(mlp1.k == h);
  CHECK(find(k.backward, "mlp.experts.mlp1 wgrad (grouped)").m == 4 * 2 * f);
  CHECK(count_prefix(k.forward, "mlp.experts.gate") == 0);
  // repeat_interleave's index_select writes a bias row for every row (and reads its int64 index).
  CHECK(find(k.forward, "mlp1 bias gather").bytes == e * R * 2 * f + 8 * R);
  CHECK(find(k.forward, "mlp1 bias add").bytes == 3 * e * R * 2 * f);
  CHECK(find(k.forward, "down bias add").bytes == 3 * e * R * h);
  CHECK(find(k.backward, "mlp1 bias grad index_add").bytes == e * R * 2 * f + 8 * R);
  CHECK(find(k.backward, "down bias grad index_add").bytes == e * R * h + 8 * R);
}

TEST_CASE("gpt-oss eager: the clamped SwiGLU runs 7 ops forward and 14 backward, 18 and 44 elements of traffic each") {
  const auto& k = block_kernels(toy(), false);
  double fwd = 0, bwd = 0;
  for (const auto& x : k.forward)
    if (x.op.rfind("swiglu", 0) == 0) fwd += x.bytes;
  for (const auto& x : k.backward)
    if (x.op.rfind("swiglu", 0) == 0) bwd += x.bytes;
  CHECK(count_prefix(k.forward, "swiglu") == 7);
  CHECK(count_prefix(k.backward, "swiglu") == 14);
  CHECK(fwd == 18 * e * n);  // the plain SwiGLU's silu and mul: 5
  CHECK(bwd == 44 * e * n);  // ... its backward: 9
  // A strided slice's read touches x's every element: both of its halves' bytes.
  CHECK(find(k.forward, "swiglu clamp glu").bytes == 3 * e * n);
  CHECK(find(k.backward, "swiglu slice bwd zeros").bytes == 2 * e * n);
  // Without the keys: the plain SwiGLU's two kernels, no biases.
  const auto& plain = block_kernels(toy(false), false);
  CHECK(count_prefix(plain.forward, "swiglu") == 0);
  CHECK(find(plain.forward, "silu").bytes == 2 * e * n);
  CHECK(count_prefix(plain.forward, "mlp1 bias") == 0);
}

TEST_CASE("gpt-oss's sinks rescale the attention output by sigmoid(lse - sink): eager op by op, compiled one backward kernel") {
  const auto& k = block_kernels(toy(), false);
  CHECK(find(k.forward, "sinks lse sub").bytes == 8 * lse);
  CHECK(find(k.forward, "sinks rescale").bytes == 3 * e * 64 * q);
  CHECK(find(k.backward, "sinks scale grad sum").bytes == e * 64 * q + e * lse);
  CHECK(count_prefix(k.forward, "sinks") == 4);
  CHECK(count_prefix(k.backward, "sinks") == 6);
  const auto& c = block_kernels(toy(), true);
  CHECK(count_prefix(c.forward, "sinks") == 0);
  CHECK(find(c.backward, "sinks bwd").bytes == 3 * e * 64 * q + 4 * lse);
}

TEST_CASE("gpt-oss compiled: the biases and the clamps join the SwiGLU's one kernel each way, the bias gradients stay") {
  const auto& c = block_kernels(toy(), true);
  CHECK(find(c.forward, "swiglu").bytes == 3 * e * n);
  CHECK(find(c.backward, "swiglu bwd").bytes == 5 * e * n);
  CHECK(count_prefix(c.forward, "mlp1 bias") == 0);
  CHECK(count_prefix(c.forward, "down bias") == 0);
  CHECK(find(c.backward, "mlp1 bias grad index_add").bytes == e * R * 2 * f + 8 * R);
}

TEST_CASE("gpt-oss's biases and sinks are parameters: E (2f + h) and heads a block") {
  const auto with = toy(), without = toy(false);
  CHECK(models::parameter_count(with) - models::parameter_count(without) == 2 * (4 * (2 * 32 + 64) + 4));
  // A token runs 2 of the 4 experts' biases.
  CHECK(models::active_parameter_count(with) - models::active_parameter_count(without) == 2 * (2 * (2 * 32 + 64) + 4));
  models::TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 64;
  const auto units = models::fsdp_units(with, models::WrapPolicy::Torchtitan, shape);
  std::int64_t sum = 0;
  for (const auto& u : units) sum += u.params;
  CHECK(sum == models::parameter_count(with));
  CHECK(units.at(1).expert_params == 4 * (3 * 64 * 32 + 2 * 32 + 64));
}

TEST_CASE("gpt-oss keys: bad input names the key, its line and what it needs") {
  const std::string rest = "cluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining: {framework: torchtitan}\n";
  const auto load = [&](const std::string& model) { return scenarios::parse_scenario(model + rest, "m.yaml"); };
  CHECK_THROWS_WITH_AS(load("model: {preset: llama3.1-8b, expert_bias: true}\n"),
                       Contains("m.yaml:1: model.expert_bias: expert_bias is modelled on a mixture of experts' experts "
                                "(gpt-oss's) only: set experts too"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: gpt-oss-20b,\n  swiglu_limit: -2}\n"),
                       Contains("m.yaml:2: model.swiglu_limit: expected the clamped SwiGLU's limit (gpt-oss: 7.0), or 0"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: qwen3-30b-a3b, shared_experts: 1, swiglu_limit: 7}\n"),
                       Contains("m.yaml:1: model.shared_experts: the clamped SwiGLU is modelled as gpt-oss runs it, "
                                "without shared experts"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: deepseek-v2-lite, attention_sinks: true}\n"),
                       Contains("m.yaml:1: model.attention_sinks: attention sinks are modelled on gpt-oss's attention"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: gpt-oss-20b, expert_bias: maybe}\n"), Contains("m.yaml:1: model.expert_bias"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: qwen3-30b-a3b, bias: true}\n"),
                       Contains("set bias: qkv (biases on q, k and v) and expert_bias: true"), InputError);
}

TEST_CASE("compile_moe submodules: norms compiled alone, residual adds eager, gpt-oss's experts eager, the generic SwiGLU compiled") {
  models::TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 64, shape.activation_bytes = 2;
  shape.impl.compiled = true;
  shape.impl.compile_moe = models::Implementation::MoeCompile::Submodules;
  const auto oss = models::fsdp_units(toy(), models::WrapPolicy::Torchtitan, shape);
  const auto& k = *oss.at(1).kernels;
  constexpr double stream = 64 * h;  // 64 tokens of the hidden size
  CHECK(find(k.forward, "residual 1").bytes == 3 * e * stream);
  CHECK(find(k.forward, "ln_1").bytes == 2 * e * stream + 4 * 64);
  CHECK(find(k.backward, "ln_1 bwd").bytes == 3 * e * stream + 4 * 64);
  CHECK(count_prefix(k.forward, "swiglu") == 7);
  CHECK(find(k.forward, "mlp1 bias add").bytes == 3 * e * R * 2 * f);
  CHECK(count_prefix(k.backward, "sinks") == 1);  // the attention module is compiled
  const auto generic = models::fsdp_units(toy(false), models::WrapPolicy::Torchtitan, shape);
  CHECK(find(generic.at(1).kernels->forward, "swiglu").bytes == 3 * e * n);
  // Block: the norms take the residual adds in, as a dense compiled block's.
  shape.impl.compile_moe = models::Implementation::MoeCompile::Block;
  const auto block = models::fsdp_units(toy(), models::WrapPolicy::Torchtitan, shape);
  CHECK(count_prefix(block.at(1).kernels->forward, "residual") == 0);
  CHECK(find(block.at(1).kernels->forward, "ln_1").bytes == 4 * e * stream);
  CHECK(count_prefix(block.at(1).kernels->forward, "swiglu") == 1);
  // Eager: the MoE block as an uncompiled one's.
  shape.impl.compile_moe = models::Implementation::MoeCompile::Eager;
  const auto eager = models::fsdp_units(toy(), models::WrapPolicy::Torchtitan, shape);
  shape.impl.compiled = false;
  const auto plain = models::fsdp_units(toy(), models::WrapPolicy::Torchtitan, shape);
  CHECK(eager.at(1).kernels->forward.size() == plain.at(1).kernels->forward.size());
  CHECK(eager.at(1).kernels->backward.size() == plain.at(1).kernels->backward.size());
}

TEST_CASE("router_fp32: the gate's input and weight cast to fp32, its three GEMMs on CUDA cores, the gradients cast back") {
  models::TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 64, shape.activation_bytes = 2;
  shape.impl.router_fp32 = true;
  const auto units = models::fsdp_units(toy(), models::WrapPolicy::Torchtitan, shape);
  const auto& k = *units.at(1).kernels;
  CHECK(find(k.forward, "router input to fp32").bytes == (e + 4) * 64 * h);
  CHECK(find(k.forward, "router weight to fp32").bytes == (e + 4) * 4 * h);
  CHECK(find(k.forward, "mlp.router").fp32);
  CHECK(find(k.backward, "mlp.router dgrad").fp32);
  CHECK(find(k.backward, "mlp.router wgrad").fp32);
  CHECK(find(k.backward, "router input grad to bf16").bytes == (4 + e) * 64 * h);
  CHECK(count_prefix(k.forward, "router scores to fp32") == 0);  // the GEMM writes fp32 already
  shape.impl.router_fp32 = false;
  const auto bf16 = models::fsdp_units(toy(), models::WrapPolicy::Torchtitan, shape);
  CHECK_FALSE(find(bf16.at(1).kernels->forward, "mlp.router").fp32);
  CHECK(count_prefix(bf16.at(1).kernels->forward, "router input to fp32") == 0);
}

TEST_CASE("an fp32 GEMM on CUDA cores takes its FLOPs at peak.fp32, or its fp32 operands at the stream bandwidth") {
  const auto p = test::toy();  // fp32 50 TFLOP/s, stream 100 TB/s, kernels at least 2 us
  // gpt-oss-20b's gate at 8,192 tokens: 2 x 8192 x 32 x 2880 FLOP over 50 TFLOP/s = 30.2 us.
  CHECK(p.fp32_simt_gemm_seconds(8192, 32, 2880) == doctest::Approx(2.0 * 8192 * 32 * 2880 / 50e12));
  // 1e8 rows of one: 4 us of FLOPs, 8 us of fp32 traffic (4 x 2e8 bytes).
  CHECK(p.fp32_simt_gemm_seconds(1e8, 1, 1) == doctest::Approx(4 * (2e8 + 1) / 100e12));
  CHECK(p.fp32_simt_gemm_seconds(10, 10, 10) == doctest::Approx(2e-6));
  models::Kernel g;
  g.kind = models::KernelKind::Gemm, g.m = 8192, g.n = 32, g.k = 2880, g.fp32 = true;
  CHECK(p.kernel_seconds(g, models::AttentionKernel::Flash2, sim::Dtype::BF16, false) ==
        doctest::Approx(2.0 * 8192 * 32 * 2880 / 50e12));
}
