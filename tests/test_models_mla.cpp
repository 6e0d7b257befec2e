// Multi-head latent attention (DeepSeek-V2/V3) and the DeepSeek presets: parameter counts against
// the published ones, and the projections' and the attention kernel's shapes by hand.
#include "kernel_list_testing.hpp"
#include "model_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"

#include "common/input.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using namespace tagcsim::models;

using test::load;

TEST_CASE("DeepSeek-V2-Lite: 15.7B parameters, latent attention of 13.8M a block, 26 of 27 blocks with 64 experts") {
  const auto m = preset("deepseek-v2-lite");
  // A block's attention: q 2048 x 16 x 192, the latent 2048 x (512 + 64) and its norm (512), the up
  // projection 512 x 16 x (128 + 128), out 16 x 128 x 2048.
  const double attention = 2048.0 * 3072 + 2048.0 * 576 + 512 + 512.0 * 4096 + 2048.0 * 2048;
  CHECK(attention == 13'763'072);
  const double dense = 3 * 2048.0 * 10944, expert = 3 * 2048.0 * 1408, router = 2048.0 * 64;
  const double total = 2 * 102400.0 * 2048 + 2048 + 27 * (attention + 2 * 2048) + dense + 26 * (router + 66 * expert);
  CHECK(double(parameter_count(m)) == total);
  CHECK(parameter_count(m) == 15'706'484'224);  // the paper's 15.7B
  // A token: the router, 6 routed and 2 shared experts of each MoE block (2.45B without the token
  // embedding, the paper's 2.4B).
  CHECK(active_parameter_count(m) == 2'661'150'208);
  CHECK(double(active_parameter_count(m)) == total - 26 * 58 * expert);
  // MFU's attention term: 6 L (q + v) s per token, q = 16 x 192 and v = 16 x 128 wide.
  CHECK(model_flops_per_token(m, 4096) ==
        doctest::Approx(6 * double(active_parameter_count(m) - 102400 * 2048) + 6.0 * 27 * (3072 + 2048) * 4096));
  // torchtitan names this shape its DeepSeek-V3 "16B" flavor.
  CHECK(parameter_count(preset("deepseek-v3-16b")) == 15'706'484'224);
}

TEST_CASE("DeepSeek-V3: 671B parameters, q through a 1536 latent, 37.6B a token uses") {
  const auto m = preset("deepseek-v3-671b");
  const double q = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192;
  const double attention = q + 7168.0 * 576 + 512 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
  const double dense = 3 * 7168.0 * 18432, expert = 3 * 7168.0 * 2048, router = 7168.0 * 256;
  const double total = 2 * 129280.0 * 7168 + 7168 + 61 * (attention + 2 * 7168) + 3 * dense + 58 * (router + 257 * expert);
  CHECK(double(parameter_count(m)) == total);
  CHECK(parameter_count(m) == 671'026'404'352);
  CHECK(active_parameter_count(m) == 37'552'282'624);  // the report's 37B
  CHECK(parameter_count(preset("deepseek-v3")) == 671'026'404'352);
}

TEST_CASE("latent attention's kernels: q, the latent, the up projection, and V narrower than q in the kernel") {
  const auto m = preset("deepseek-v2-lite");
  TrainingShape shape;
  shape.micro_batch = 2, shape.seq_len = 4096;
  const auto units = fsdp_units(m, WrapPolicy::Torchtitan, shape);
  const auto& block = units.at(2);  // an MoE block (block 0 is dense)
  REQUIRE(block.kind == UnitKind::Block);
  const auto& k = *block.kernels;
  using test::find;
  const double T = 8192;
  CHECK(find(k.forward, "attn.q").m == T);
  CHECK(find(k.forward, "attn.q").n == 16 * 192);
  CHECK(find(k.forward, "attn.kv_a").n == 512 + 64);
  CHECK(find(k.forward, "attn.kv_b").k == 512);
  CHECK(find(k.forward, "attn.kv_b").n == 16 * (128 + 128));
  CHECK(find(k.forward, "attn.out").k == 16 * 128);  // V's heads
  CHECK(find(k.forward, "kv_norm pow").bytes == 8 * T * 512);  // the latent's RMSNorm, eager
  CHECK(find(k.forward, "k concat").bytes == 2 * 2 * T * 3072);
  // The attention's output is heads x v_head_dim: its layout copy moves 2048 wide rows, not q's 3072.
  CHECK(find(k.forward, "attention out transpose").bytes == 2 * 2 * T * 2048);
  CHECK(find(k.backward, "attention bwd dO.O").bytes == 2 * 2 * T * 2048);
  // QK^T over 192 and AV over 128: the kernel is timed at their mean, 160, the same FLOPs.
  const auto a = find(k.forward, "attention");
  CHECK(a.head_dim == 160);
  CHECK(a.batch_heads == 2 * 16);
  // Causal: each (batch, head) does s^2 / 2 of QK^T (2 x 192 FLOPs a pair) and of AV (2 x 128).
  CHECK(a.flops() == doctest::Approx(2 * 16 * 4096.0 * 4096 * (192 + 128)));
  // The block's forward GEMMs: its attention projections, the router, 6 routed and 2 shared experts.
  double gemm = 0;
  for (const auto& kk : k.forward)
    if (kk.kind == KernelKind::Gemm) gemm += kk.flops();
  const double attention = 2048.0 * 3072 + 2048.0 * 576 + 512.0 * 4096 + 2048.0 * 2048;
  CHECK(gemm == doctest::Approx(2 * T * (attention + 2048.0 * 64 + 8 * 3 * 2048.0 * 1408)));
  // The unit's own FLOP count agrees (units built by hand time from it).
  CHECK(block.forward_flops == doctest::Approx(gemm + a.flops()));
}

TEST_CASE("bad input: latent attention's shape, and where it is not modelled") {
  CHECK_THROWS_WITH_AS(load("model: {preset: deepseek-v2-lite, rope_head_dim: 192}"),
                       doctest::Contains("t.yaml:1: model.rope_head_dim: latent attention needs head_dim"), InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: deepseek-v2-lite, v_head_dim: 0}"),
                       doctest::Contains("model.v_head_dim: latent attention needs v_head_dim"), InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: deepseek-v2-lite, kv_heads: 8}"),
                       doctest::Contains("model.kv_heads: latent attention gives every head its own K and V"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model: {preset: llama3.1-8b, v_head_dim: 128}"),
                       doctest::Contains("model.v_head_dim: only latent attention has it"), InputError);
  TrainingShape tp;
  tp.tensor_parallel = 2;
  CHECK_THROWS_WITH_AS(fsdp_units(preset("deepseek-v2-lite"), WrapPolicy::Torchtitan, tp),
                       doctest::Contains("latent attention (kv_lora_rank) with tensor or context parallelism"),
                       InputError);
  TrainingShape autocast;
  autocast.impl.autocast_casts = true;
  auto dense = preset("deepseek-v2-lite");
  dense.experts = dense.experts_per_token = dense.shared_experts = dense.dense_layers = 0;
  dense.dense_ffn = 0;
  CHECK_THROWS_WITH_AS(fsdp_units(dense, WrapPolicy::Torchtitan, autocast), doctest::Contains("training.autocast"),
                       InputError);
}
