// A mixture of experts in the model: every expert's weights held, a token's experts' FLOPs run,
// shared experts and dense blocks, and the shapes it is refused with. Expected numbers are worked
// out by hand in the comments next to them.
#include "kernel_list_testing.hpp"
#include "model_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::models;

using test::load;

TEST_CASE("a mixture of experts: every expert's weights held, a token's experts' FLOPs run") {
  const auto m = preset("mixtral-8x7b");
  // Per layer: attention 4096 x 6144 + 4096 x 4096, router 4096 x 8, experts 8 x 3 x 4096 x 14336,
  // two norms; a token runs 2 of the 8 experts.
  const double attention = 4096.0 * 6144 + 4096.0 * 4096, router = 4096.0 * 8, expert = 3 * 4096.0 * 14336;
  const double active = 2 * 32000.0 * 4096 + 32 * (attention + router + 2 * expert + 2 * 4096) + 4096;
  CHECK(active == 12'879'925'248.0);  // the paper's 12.9B active parameters
  // MFU's 6N counts the active weights (the output head's too, not the token embedding's), plus
  // PaLM's attention term 12 L q s.
  CHECK(model_flops_per_token(m, 4096) == doctest::Approx(6 * (active - 32000.0 * 4096) + 12.0 * 32 * 4096 * 4096));
  TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 4096;
  const auto units = fsdp_units(m, WrapPolicy::Block, shape);
  const auto& block = units.at(1);
  REQUIRE(block.kind == UnitKind::Block);
  // FSDP gathers every expert of the block, its forward GEMMs run 2 of them on each of the 4096
  // tokens: 2 x 4096 x (attention + router + 2 experts) FLOPs (the attention core apart).
  CHECK(double(block.params) == attention + router + 8 * expert + 2 * 4096);
  CHECK(double(block.mlp_params) == router + 8 * expert);
  const auto& kernels = *block.kernels;
  double gemm = 0;
  for (const auto& k : kernels.forward)
    if (k.kind == KernelKind::Gemm) gemm += k.flops();
  CHECK(gemm == doctest::Approx(2 * 4096.0 * (attention + router + 2 * expert)));
  // One grouped GEMM per expert matrix over the 8192 routed rows (balanced: 1024 an expert),
  // timed as the stacked GEMM; its wgrad as the 8 experts' weight gradients stacked.
  using test::find;
  const auto gate = find(kernels.forward, "mlp.experts.gate (grouped)");
  CHECK(gate.m == 8192);
  CHECK(gate.n == 14336);
  CHECK(gate.k == 4096);
  const auto wgrad = find(kernels.backward, "mlp.experts.gate wgrad (grouped)");
  CHECK(wgrad.m == 8 * 14336);
  CHECK(wgrad.n == 4096);
  CHECK(wgrad.k == 1024);
  CHECK(find(kernels.forward, "permute tokens").bytes == 2 * 2 * 8192.0 * 4096);  // e = 2: read and write
  CHECK(find(kernels.forward, "mlp.router").n == 8);
  // Activations: the dense MLP's g, silu(g), u and product for 2 x 4096 rows of 14336, the permuted
  // input and the experts' output (2 x 4096 rows of 4096), beside ln_2's and the router's.
  const double e = 2, Tk = 8192;
  const double moe_kept = (4096 * Tk + 3 * 14336 * Tk) * e + (14336 * Tk + 4096 * Tk) * e + 4 * Tk;
  const double router_kept = 8 * 4096.0 * 4096 + 4 * 4096.0 * 8 + 12 * Tk;  // ln_2: fp32 input, two bf16 outputs
  const double attention_kept = block.activation_bytes - moe_kept - router_kept;
  auto dense = m;
  dense.experts = 0, dense.experts_per_token = 0;
  const auto dense_block = fsdp_units(dense, WrapPolicy::Block, shape).at(1);
  // The attention half keeps the same as in the dense model, whose MLP keeps ln_2 and 4 x 14336 per token.
  CHECK(attention_kept ==
        doctest::Approx(dense_block.activation_bytes - 8 * 4096.0 * 4096 - 4 * 14336.0 * 4096 * e));
}

TEST_CASE("bad input: a mixture of experts' shape, and what it is not modelled with") {
  CHECK_THROWS_WITH_AS(load("model: {preset: mixtral-8x7b, experts_per_token: 9}"),
                       doctest::Contains("t.yaml:1: model.experts_per_token: expected the experts each token runs, 1 "
                                         "to experts (8), got 9"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: mixtral-8x7b, experts: 1}"),
                       doctest::Contains("model.experts: a mixture of experts needs 2 or more experts"), InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: llama2-7b, experts_per_token: 2}"),
                       doctest::Contains("model.experts_per_token: only a mixture of experts has experts_per_token"), InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: gpt2-124m, experts: 8, experts_per_token: 2}"),
                       doctest::Contains("experts are SwiGLU MLPs here"), InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: mixtral-8x7b, expert: 8}"), doctest::Contains("t.yaml:1"), InputError);
  const auto m = preset("mixtral-8x7b");
  TrainingShape tp;
  tp.tensor_parallel = 2;
  CHECK_THROWS_WITH_AS(fsdp_units(m, WrapPolicy::Block, tp),
                       doctest::Contains("training.tensor_parallel: tensor parallelism with a mixture of experts"),
                       InputError);
  CHECK_THROWS_WITH_AS(fsdp_units(m, WrapPolicy::Size, TrainingShape{}), doctest::Contains("training.wrap"), InputError);
}

TEST_CASE("a mixture of experts with shared experts: every token runs them beside its routed ones") {
  // hidden 1024, 8 heads, 8 experts of 512 (2 a token) and 2 shared, 2 layers, vocab 1000, untied.
  const auto m = load(R"(model: {layers: 2, hidden: 1024, heads: 8, ffn: 512, gated_mlp: true, norm: rmsnorm,
  vocab: 1000, seq_len: 256, experts: 8, experts_per_token: 2, shared_experts: 2})");
  // Per layer: attention 4 x 1024^2, router 1024 x 8, (8 + 2) experts of 3 x 1024 x 512, two norms.
  const double expert = 3 * 1024.0 * 512, attention = 4 * 1024.0 * 1024;
  CHECK(double(parameter_count(m)) == 2 * (attention + 8192 + 10 * expert + 2048) + 2 * 1000.0 * 1024 + 1024);
  CHECK(parameter_count(m) == 41'915'392);
  // A token uses the router, its 2 routed experts and the 2 shared ones.
  CHECK(active_parameter_count(m) == 23'041'024);
  TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 256;
  const auto block = fsdp_units(m, WrapPolicy::Block, shape).at(1);
  // The shared experts are one SwiGLU of 2 x 512 over the 256 tokens.
  const auto gate = test::find(block.kernels->forward, "mlp.shared.gate");
  CHECK(gate.m == 256);
  CHECK(gate.n == 1024);
  CHECK(gate.k == 1024);
  CHECK(gate.groups == 1);
  double gemm = 0;
  for (const auto& k : block.kernels->forward)
    if (k.kind == KernelKind::Gemm) gemm += k.flops();
  CHECK(gemm == doctest::Approx(2 * 256.0 * (attention + 8192 + 4 * expert)));
  CHECK_THROWS_WITH_AS(load("model: {preset: llama2-7b, shared_experts: 1}"),
                       doctest::Contains("t.yaml:1: model.shared_experts: only a mixture of experts has shared_experts"), InputError);
}

TEST_CASE("a mixture of experts with dense blocks: the first dense_layers, then all but every moe_every-th") {
  // 4 blocks: block 0 dense (dense_layers 1), then blocks 1 and 3 with the experts (moe_every 2:
  // blocks moe_every - 1, 2 moe_every - 1, ...) and block 2 dense, the dense ones a SwiGLU of 2048.
  const auto m = load(R"(model: {layers: 4, hidden: 1024, heads: 8, ffn: 512, gated_mlp: true, norm: rmsnorm,
  vocab: 1000, seq_len: 256, experts: 8, experts_per_token: 2, dense_layers: 1, moe_every: 2, dense_ffn: 2048})");
  CHECK(moe_block_count(m) == 2);
  // Per block: attention 4 x 1024^2 and two norms; an MoE block's router 1024 x 8 and 8 experts of
  // 3 x 1024 x 512; a dense block's 3 x 1024 x 2048.
  const double attention = 4 * 1024.0 * 1024, moe = 8192 + 8 * 3 * 1024.0 * 512, dense = 3 * 1024.0 * 2048;
  CHECK(double(parameter_count(m)) == 4 * (attention + 2048) + 2 * moe + 2 * dense + 2 * 1000.0 * 1024 + 1024);
  CHECK(parameter_count(m) == 56'599'552);
  CHECK(active_parameter_count(m) == 37'725'184);  // an MoE block's token runs the router and 2 experts
  TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 256;
  const auto units = fsdp_units(m, WrapPolicy::Torchtitan, shape);
  REQUIRE(units.size() == 6);
  for (int i : {0, 2}) {  // dense: no experts, the MLP's GEMMs 2048 wide
    CAPTURE(i);
    const auto& b = units.at(std::size_t(1 + i));
    CHECK(double(b.params) == attention + 2048 + dense);
    CHECK(b.expert_params == 0);
    CHECK(test::find(b.kernels->forward, "mlp.gate").n == 2048);
  }
  for (int i : {1, 3}) {
    CAPTURE(i);
    const auto& b = units.at(std::size_t(1 + i));
    CHECK(double(b.params) == attention + 2048 + moe);
    CHECK(double(b.expert_params) == 8 * 3 * 1024.0 * 512);
    CHECK(test::find(b.kernels->forward, "mlp.experts.gate (grouped)").groups == 8);
  }
  CHECK_THROWS_WITH_AS(load("model: {preset: llama2-7b, dense_layers: 1}"),
                       doctest::Contains("t.yaml:1: model.dense_layers: only a mixture of experts has dense_layers"), InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: mixtral-8x7b, dense_layers: 32}"),
                       doctest::Contains("model.dense_layers: expected dense_layers >= 0, moe_every >= 1 and dense_ffn "
                                         ">= 0 leaving some of the 32 blocks with experts"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: mixtral-8x7b, moe_every: 0}"), doctest::Contains("model.moe_every"),
                       InputError);
}

TEST_CASE("Llama 4 as torchtitan builds it: one of E experts and a shared one, Maverick's MoE every second block") {
  // A block: q and out 5120 x 5120, k and v 5120 x 1024, two norms; an expert or the shared one
  // 3 x 5120 x 8192; the router 5120 x E; Maverick's dense blocks an MLP of 3 x 5120 x 16384.
  const double attention = 2 * 5120.0 * 5120 + 2 * 5120.0 * 1024 + 2 * 5120, expert = 3 * 5120.0 * 8192;
  const double ends = 2 * 202048.0 * 5120 + 5120;  // embedding, output, final norm
  const auto scout = preset("llama4-scout-17b-16e");
  CHECK(double(parameter_count(scout)) == ends + 48 * (attention + 17 * expert + 5120.0 * 16));
  CHECK(parameter_count(scout) == 107'769'861'120);  // the language model of the card's 109B (multimodal)
  CHECK(active_parameter_count(scout) == 17'172'894'720);
  const auto maverick = preset("llama4-maverick-17b-128e");
  const double dense_block = attention + 3 * 5120.0 * 16384;
  CHECK(double(parameter_count(maverick)) == ends + 24 * (attention + 129 * expert + 5120.0 * 128) + 24 * dense_block);
  CHECK(parameter_count(maverick) == 400'711'848'960);  // the card's 400B
  CHECK(active_parameter_count(maverick) == 17'184'691'200);
  CHECK(moe_block_count(maverick) == 24);
  CHECK(parameter_count(preset("llama4-scout")) == parameter_count(scout));
}
