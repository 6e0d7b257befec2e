// Model presets, `model:` parsing and FSDP units. Expected numbers are worked
// out by hand in the comments next to them.
#include "kernel_list_testing.hpp"
#include "model_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>

using namespace tagcsim;
using namespace tagcsim::models;
using test::load;

namespace {

std::int64_t unit_param_sum(const std::vector<FsdpUnit>& units) {
  std::int64_t n = 0;
  for (const auto& u : units) n += u.params;
  return n;
}

template <class F>
double sum(const std::vector<FsdpUnit>& units, F field) {
  double s = 0;
  for (const auto& u : units) s += field(u);
  return s;
}

const FsdpUnit& unit_named(const std::vector<FsdpUnit>& units, const std::string& name) {
  for (const auto& u : units)
    if (u.name == name) return u;
  FAIL("no unit named " << name);
  return units.front();
}

}  // namespace

TEST_CASE("presets reproduce the published parameter counts exactly where the shape is exact") {
  struct Row {
    const char* name;
    std::int64_t count;
  };
  // GPT-2: V*h + 1024*h + L*(12h^2 + 13h) + 2h; 124M: 38,597,376 + 786,432 + 85,054,464 + 1,536.
  // Llama: 2*V*h + L*(attn + 3*h*ffn + 2h) + h; 7B: 262,144,000 + 32*202,383,360 + 4,096.
  // Llama 3.2 ties its embedding: 1B = 128256*2048 + 16*(2*2048^2 + 2*2048*512 + 3*2048*8192 + 2*2048) + 2048
  // = 262,668,288 + 16*60,821,504 + 2,048.
  // MPT (LLM Foundry yamls, no published exact count): 50368*h + L*(12h^2 + 2h) + h.
  // Qwen3 (heads of 128, q and k norms of 128 each): 8B = 2*151936*4096 + 36*(4096*(4096 + 2*1024) +
  // 4096*4096 + 3*4096*12288 + 2*4096 + 256) + 4096 = 1,244,659,712 + 36*192,946,432 + 4,096.
  const Row rows[] = {
      {"gpt2-124m", 124'439'808},         {"gpt2-355m", 354'823'168},
      {"gpt2-774m", 774'030'080},         {"gpt2-1.5b", 1'557'611'200},
      {"gpt2-124m-untied", 162'614'016},  {"llama2-7b", 6'738'415'616},
      {"llama2-13b", 13'015'864'320},     {"llama2-70b", 68'976'648'192},
      {"llama3.1-8b", 8'030'261'248},     {"llama3.1-70b", 70'553'706'496},
      {"llama3.1-405b", 405'853'388'800}, {"mpt-125m", 123'636'480},
      {"mpt-350m", 353'616'896},          {"mpt-760m", 756'917'760},
      {"mpt-1b", 1'311'213'568},          {"mpt-3b", 2'645'690'880},
      {"mpt-7b", 6'649'024'512},          {"mpt-13b", 12'841'210'880},
      {"mpt-30b", 29'956'742'144},        {"mpt-70b", 64'838'443'008},
      {"llama3.2-1b", 1'235'814'400},     {"llama3.2-3b", 3'212'749'824},
      {"mistral-7b-v0.3", 7'248'023'552}, {"qwen3-0.6b", 596'049'920},
      {"mistral-7b-v0.1", 7'241'732'096},    {"gemma2-2b", 2'614'341'888},
      {"gemma2-9b", 9'241'705'984},       {"gemma2-27b", 27'227'128'320},
      {"gemma3-1b", 999'885'952},         {"gemma3-4b", 3'880'099'328},
      {"gemma3-12b", 11'765'788'416},     {"gemma3-27b", 27'009'002'240},
      {"qwen3-1.7b", 1'720'574'976},      {"qwen3-4b", 4'022'468'096},
      {"qwen3-8b", 8'190'735'360},        {"qwen3-14b", 14'768'307'200},
      {"qwen3-32b", 32'762'123'264},      {"qwen2.5-0.5b", 494'032'768},
      {"qwen2.5-1.5b", 1'543'714'304},    {"qwen2.5-3b", 3'085'938'688},
      {"qwen2.5-7b", 7'615'616'512},      {"qwen2.5-14b", 14'770'033'664},
      {"qwen2.5-32b", 32'763'876'352},    {"qwen2.5-72b", 72'706'203'648},
      // OLMo 2 with per-head QK norms: OLMo-core's counts less (h + kv x d) - 2d a layer.
      {"olmo2-7b", 7'298'617'344 - 32 * (8192 - 256)},
      {"olmo2-13b", 13'716'198'400 - 40 * (10240 - 256)},
      {"olmo2-32b", 32'234'279'936 - 64 * (5120 + 1024 - 256)},
      // Mixtures of experts: a router (h x E) and E experts of 3 h f a layer. Mixtral 8x7B:
      // 2*32000*4096 + 32*(4096*6144 + 4096*4096 + 4096*8 + 8*3*4096*14336 + 2*4096) + 4096.
      {"mixtral-8x7b", 46'702'792'704},
      {"qwen3-30b-a3b", 30'532'122'624},
      {"qwen3-235b-a22b", 235'093'634'560},
      // gpt-oss: 2*201088*2880 + L*(2880*(4096 + 2*512) + 4096*2880 + (4096 + 2*512) + 64 + E*(3*2880*2880
      // + 2*2880 + 2880) + 2880*E + 2*2880) + 2880 (the sinks, 64 a layer; each expert's biases, 8640);
      // the model card's counts less what is not modelled a layer: the out projection's bias (2880) and
      // the router's (E). 20b: 24*(2880 + 32) = 69,888.
      {"gpt-oss-20b", 20'914'757'184 - 24 * (2880 + 32)},
      {"gpt-oss-120b", 116'829'156'672 - 36 * (2880 + 128)},
      // Code Llama 34B: 2*32000*8192 + 48*(2*8192^2 + 2*8192*1024 + 3*8192*22016 + 2*8192) + 8192.
      {"codellama-34b", 33'743'970'304},
      // DeepSeek's latent attention and dense first blocks (test_models_mla.cpp by hand).
      {"deepseek-v2-lite", 15'706'484'224},
      {"deepseek-v3-671b", 671'026'404'352},
      // Llama 4 as torchtitan builds it (test_models_moe.cpp by hand).
      {"llama4-scout-17b-16e", 107'769'861'120},
      {"llama4-maverick-17b-128e", 400'711'848'960},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    CHECK(parameter_count(preset(r.name)) == r.count);
  }
  CHECK(preset_names().size() == std::size(rows));
}

TEST_CASE("OLMo 2 presets: QK norms, the padded dolma2 vocabulary, untied, 4096 tokens") {
  const auto m = preset("olmo-2-32b");
  CHECK(m.name == "olmo2-32b");
  CHECK(m.qk_norm);
  CHECK(m.vocab == 100352);
  CHECK(!m.tied_embeddings);
  CHECK(m.kv_heads == 8);
  CHECK(m.seq_len == 4096);
  CHECK(preset("olmo2-7b").kv_heads == 32);
}

TEST_CASE("MPT-7B and MPT-30B are within 0.5% of their model cards") {
  // The released MPT-7B pads the vocab to 50432: 6,649,286,656 on its card.
  CHECK(std::abs(parameter_count(preset("mpt-7b")) / 6'649'286'656.0 - 1) < 0.005);
  CHECK(std::abs(parameter_count(preset("mpt-30b")) / 29.95e9 - 1) < 0.005);
}

TEST_CASE("every preset is valid, names itself and says where it comes from") {
  for (const auto& name : preset_names()) {
    CAPTURE(name);
    auto m = preset(name);
    CHECK(m.name == name);
    CHECK(!m.source.empty());
    CHECK_NOTHROW(validate(m, name));
  }
  CHECK(preset("llama2-70b").kv_heads == 8);
  CHECK(preset("llama3.1-405b").kv_heads == 8);
  CHECK(preset("mpt-7b").learned_positions == 0);
  CHECK(preset("mpt-7b").tied_embeddings);
  CHECK_THROWS_WITH_AS(preset("gpt3"), doctest::Contains("unknown model preset 'gpt3'; expected one of: gpt2-124m"),
                       InputError);
}

TEST_CASE("model_flops_per_token: 6 * matmul params + 12 * layers * hidden * seq") {
  // GPT-2 124M (tied): N = 124,439,808 - 786,432 (wpe) = 123,653,376; 6N = 741,920,256;
  // 12 * 12 * 768 * 1024 = 113,246,208.
  CHECK(model_flops_per_token(preset("gpt2-124m"), 1024) == doctest::Approx(855'166'464.0));
  // Untied: N = 162,614,016 - 393,216 (wpe) - 38,633,472 (wte) = 123,587,328; 6N = 741,523,968;
  // 12 * 12 * 768 * 512 = 56,623,104.
  CHECK(model_flops_per_token(preset("gpt2-124m-untied"), 512) == doctest::Approx(798'147'072.0));
}

TEST_CASE("gpt2-124m-untied under the Size policy: one unit per Linear and Embedding") {
  auto m = preset("gpt2-124m-untied");
  auto units = fsdp_units(m, WrapPolicy::Size, {});
  REQUIRE(units.size() == 52);  // root, wte, wpe, 12 * 4 linears, lm_head
  CHECK(units[0].name == "root");
  CHECK(units[0].kind == UnitKind::Root);
  CHECK(units[0].params == 25 * 768);  // 2 LayerNorm weights per block + ln_f, no biases
  CHECK(units[1].name == "wte");
  CHECK(units[1].kind == UnitKind::Embedding);
  CHECK(units[1].params == 38'633'472);  // 50304 * 768
  CHECK(units[2].name == "wpe");
  CHECK(units[2].kind == UnitKind::PositionEmbedding);
  CHECK(units[2].params == 393'216);  // 512 * 768
  const char* names[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
  const UnitKind kinds[] = {UnitKind::AttentionQKV, UnitKind::AttentionOut, UnitKind::MlpUp, UnitKind::MlpDown};
  for (int layer = 0; layer < 12; ++layer)
    for (int j = 0; j < 4; ++j) {
      const auto& u = units[3 + 4 * layer + j];
      CHECK(u.name == "layers." + std::to_string(layer) + "." + names[j]);
      CHECK(u.kind == kinds[j]);
      CHECK(u.layer == layer);
    }
  CHECK(unit_named(units, "layers.0.attn.c_attn").params == 1'769'472);  // 768 * 2304
  CHECK(unit_named(units, "layers.0.attn.c_proj").params == 589'824);    // 768 * 768
  CHECK(unit_named(units, "layers.0.mlp.c_fc").params == 2'359'296);     // 768 * 3072
  CHECK(units.back().name == "lm_head");
  CHECK(units.back().kind == UnitKind::LmHead);
  CHECK(units.back().params == 38'633'472);
  CHECK(unit_param_sum(units) == parameter_count(m));
  CHECK(unit_param_sum(units) == 162'614'016);
}

TEST_CASE("each unit's parameters are broken down by what they are") {
  for (auto policy : {WrapPolicy::Block, WrapPolicy::Size})
    for (const char* name : {"gpt2-124m", "llama2-70b"})
      for (const auto& u : fsdp_units(preset(name), policy, {})) {
        CAPTURE(u.name);
        CHECK(u.attention_params + u.mlp_params + u.embedding_params + u.norm_params == u.params);
      }
}

TEST_CASE("llama2-7b under the Block policy: root plus 32 blocks, one block's FLOPs by hand") {
  auto m = preset("llama2-7b");
  TrainingShape shape;  // micro-batch 1, seq 4096, bf16, flash attention
  auto units = fsdp_units(m, WrapPolicy::Block, shape);
  REQUIRE(units.size() == 33);
  CHECK(units[0].name == "root");
  CHECK(units[0].params == 262'148'096);  // 2 * 32000 * 4096 + final RMSNorm 4096
  CHECK(unit_param_sum(units) == parameter_count(m));
  const auto& b = units[5];
  CHECK(b.name == "block.4");
  CHECK(b.kind == UnitKind::Block);
  CHECK(b.layer == 4);
  CHECK(b.params == 202'383'360);  // 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
  // GEMMs: 2 * T * (4h^2 + 3*h*ffn) = 8192 * 202,375,168 = 1,657,857,376,256.
  // Attention core, causal with flash attention: 2 * T * s * h = 2 * 4096^3 = 137,438,953,472.
  CHECK(b.forward_flops == doctest::Approx(1'795'296'329'728.0));
  CHECK(b.gemm_fraction == doctest::Approx(1'657'857'376'256.0 / 1'795'296'329'728.0));
  // Backward: 2 * GEMMs + 2.5 * core = 3,315,714,752,512 + 343,597,383,680.
  CHECK(b.backward_flops == doctest::Approx(3'659'312'136'192.0));
  CHECK(b.backward_gemm_fraction == doctest::Approx(3'315'714'752'512.0 / 3'659'312'136'192.0));
  // Root: lm_head 2 * 4096 * 4096 * 32000; the embedding lookup is free.
  CHECK(units[0].forward_flops == doctest::Approx(1'073'741'824'000.0));
}

TEST_CASE("llama3.1-8b under the Size policy: separate q/k/v and gate/up Linears") {
  auto m = preset("llama3.1-8b");
  auto units = fsdp_units(m, WrapPolicy::Size, {});
  REQUIRE(units.size() == 1 + 1 + 32 * 7 + 1);  // no wpe (RoPE)
  const char* names[] = {"attn.q", "attn.k", "attn.v", "attn.o", "mlp.gate", "mlp.up", "mlp.down"};
  for (int j = 0; j < 7; ++j) CHECK(units[2 + j].name == std::string("layers.0.") + names[j]);
  CHECK(units[4].kind == UnitKind::AttentionQKV);
  CHECK(units[5].kind == UnitKind::AttentionOut);
  CHECK(units[6].kind == UnitKind::MlpUp);
  CHECK(units[7].kind == UnitKind::MlpUp);
  CHECK(units[8].kind == UnitKind::MlpDown);
  CHECK(unit_named(units, "layers.3.attn.k").params == 4'194'304);  // 4096 x (8 KV heads * 128)
  CHECK(unit_named(units, "layers.3.mlp.up").params == 58'720'256);  // 4096 x 14336
  CHECK(units.back().name == "lm_head");
  CHECK(unit_param_sum(units) == parameter_count(m));
}

TEST_CASE("head_dim: heads wider than hidden / heads (Qwen3-0.6B's shape)") {
  // hidden 1024, 16 heads of 128 (q is 2048 wide), 8 KV heads, SwiGLU 3072, tied vocab 151936.
  const auto m = load(
      "model:\n  name: qwen3-0.6b-shape\n  layers: 28\n  hidden: 1024\n  heads: 16\n  kv_heads: 8\n"
      "  head_dim: 128\n  ffn: 3072\n  gated_mlp: true\n  vocab: 151936\n  tied_embeddings: true\n"
      "  seq_len: 4096\n  norm: rmsnorm\n");
  // Per layer: q 1024 x 2048 + k, v 1024 x 1024 each + o 2048 x 1024 = 6,291,456; MLP 3 x 1024 x 3072
  // = 9,437,184; two norms 2,048: 15,730,688; x 28 = 440,459,264; + embedding 155,582,464 + final
  // norm 1,024 = 596,042,752; Qwen3-0.6B's per-head q and k norms (qk_norm, 2 x 128 a layer) make
  // its 596,049,920.
  CHECK(parameter_count(m) == 596'042'752);
  auto with_norms = m;
  with_norms.qk_norm = true;
  CHECK(parameter_count(with_norms) == 596'049'920);
  CHECK(unit_param_sum(fsdp_units(with_norms, WrapPolicy::Size, {})) == 596'049'920);
  CHECK(unit_param_sum(fsdp_units(with_norms, WrapPolicy::Block, {})) == 596'049'920);
  auto units = fsdp_units(m, WrapPolicy::Size, {});
  CHECK(unit_named(units, "layers.0.attn.q").params == 1024 * 2048);
  CHECK(unit_named(units, "layers.0.attn.k").params == 1024 * 1024);
  CHECK(unit_named(units, "layers.0.attn.o").params == 2048 * 1024);
  CHECK(unit_param_sum(units) == parameter_count(m));
  // The attention core: 2 * T * s * (heads x head_dim) forward with flash (causal), T = s = 4096.
  TrainingShape shape;
  const auto& o = unit_named(fsdp_units(m, WrapPolicy::Size, shape), "layers.0.attn.o");
  CHECK(o.forward_flops == doctest::Approx(2.0 * 4096 * 2048 * 1024 + 2.0 * 4096 * 4096 * 2048));
  // Megatron's attention term counts the q width too: 12 * 28 * 2048 * 4096 a token.
  CHECK(model_flops_per_token(m, 4096) - model_flops_per_token(m, 2048) == doctest::Approx(12.0 * 28 * 2048 * 2048));
  // Without head_dim, 16 heads of a 1024 hidden are 64 wide: q 1024, k and v 512, so the attention
  // weights of a layer are 1024^2 + 2 x 1024 x 512 + 1024^2 = 3,145,728, half of 6,291,456.
  auto narrow = m;
  narrow.head_dim = 0;
  CHECK(parameter_count(m) - parameter_count(narrow) == 28LL * (6'291'456 - 3'145'728));
}

TEST_CASE("bias: qkv puts biases on q, k and v only (Qwen2.5-7B's shape)") {
  const auto m = load(
      "model:\n  name: qwen2.5-7b-shape\n  layers: 28\n  hidden: 3584\n  heads: 28\n  kv_heads: 4\n"
      "  ffn: 18944\n  gated_mlp: true\n  vocab: 152064\n  seq_len: 4096\n  norm: rmsnorm\n  bias: qkv\n");
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.bias);
  // Per layer: q 3584 x 3584 + 3584, k and v 3584 x 512 + 512 each, o 3584 x 3584 (no bias), MLP
  // 3 x 3584 x 18944, two norms 7,168: 233,057,792; x 28 = 6,525,618,176; + embedding and head
  // 2 x 152064 x 3584 = 1,089,994,752 + final norm 3,584 = 7,615,616,512 (the card's 7.61B).
  CHECK(parameter_count(m) == 7'615'616'512);
  auto no_bias = m;
  no_bias.qkv_bias = false;
  CHECK(parameter_count(m) - parameter_count(no_bias) == 28LL * (3584 + 2 * 512));
  auto units = fsdp_units(m, WrapPolicy::Size, {});
  CHECK(unit_named(units, "layers.0.attn.q").params == 3584LL * 3584 + 3584);
  CHECK(unit_named(units, "layers.0.attn.k").params == 3584LL * 512 + 512);
  CHECK(unit_named(units, "layers.0.attn.o").params == 3584LL * 3584);
  CHECK(unit_named(units, "layers.0.mlp.down").params == 18944LL * 3584);
  CHECK(unit_param_sum(units) == parameter_count(m));
  CHECK(unit_param_sum(fsdp_units(m, WrapPolicy::Block, {})) == parameter_count(m));
  // A misspelt value names the choices.
  CHECK_THROWS_WITH_AS(
      load("model: {preset: qwen2.5-7b, bias: qvk}\n"),
      doctest::Contains("model.bias: expected true, false or qkv (biases on q, k and v only, as Qwen2's), got 'qvk'"),
      InputError);
}

TEST_CASE("tied models have no lm_head unit, the head's work is on wte") {
  auto m = preset("gpt2-124m");
  TrainingShape shape;
  shape.seq_len = 1024;
  auto units = fsdp_units(m, WrapPolicy::Size, shape);
  CHECK(units.size() == 51);
  for (const auto& u : units) CHECK(u.kind != UnitKind::LmHead);
  CHECK(units[1].name == "wte");
  CHECK(units[1].forward_flops == doctest::Approx(2.0 * 1024 * 768 * 50257));
  CHECK(unit_param_sum(units) == 124'439'808);
}

TEST_CASE("both policies give the same totals") {
  for (const char* name : {"gpt2-124m", "gpt2-124m-untied", "llama3.1-8b", "mpt-1b", "gemma2-2b", "gemma3-1b"})
    for (bool flash : {true, false})
      for (bool ckpt : {false, true}) {
        CAPTURE(name);
        CAPTURE(flash);
        CAPTURE(ckpt);
        TrainingShape shape;
        shape.micro_batch = 2;
        shape.flash_attention = flash;
        shape.activation_checkpointing = ckpt;
        auto block = fsdp_units(preset(name), WrapPolicy::Block, shape);
        auto size = fsdp_units(preset(name), WrapPolicy::Size, shape);
        CHECK(unit_param_sum(block) == unit_param_sum(size));
        CHECK(unit_param_sum(block) == parameter_count(preset(name)));
        for (auto f : {&FsdpUnit::forward_flops, &FsdpUnit::backward_flops, &FsdpUnit::forward_memory_bytes,
                       &FsdpUnit::backward_memory_bytes, &FsdpUnit::activation_bytes})
          CHECK(sum(block, [&](const FsdpUnit& u) { return u.*f; }) ==
                doctest::Approx(sum(size, [&](const FsdpUnit& u) { return u.*f; })));
      }
}

TEST_CASE("element-wise traffic of a GPT-2 block, per token in elements of 2 bytes") {
  // Forward: ln_1 2h | attention I/O 4h + residual 3h | ln_2 2h + GELU 2*4h | residual 3h = 22h.
  // Backward: 3h | 8h + 3h | 3h + 3*4h | 3h = 32h.
  auto b = fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, {})[1];
  CHECK(b.forward_memory_bytes == doctest::Approx(22.0 * 768 * 1024 * 2));
  CHECK(b.backward_memory_bytes == doctest::Approx(32.0 * 768 * 1024 * 2));
}

TEST_CASE("without flash attention the full s x s attention is computed") {
  auto m = preset("gpt2-124m");
  TrainingShape eager;
  eager.flash_attention = false;
  auto flash = unit_named(fsdp_units(m, WrapPolicy::Size, {}), "layers.0.attn.c_proj");
  auto full = unit_named(fsdp_units(m, WrapPolicy::Size, eager), "layers.0.attn.c_proj");
  const double gemm = 2.0 * 1024 * 768 * 768;
  CHECK(flash.forward_flops == doctest::Approx(gemm + 2.0 * 1024 * 1024 * 768));
  CHECK(flash.backward_flops == doctest::Approx(2 * gemm + 2.5 * 2.0 * 1024 * 1024 * 768));
  CHECK(full.forward_flops == doctest::Approx(gemm + 4.0 * 1024 * 1024 * 768));
  CHECK(full.backward_flops == doctest::Approx(2 * gemm + 2 * 4.0 * 1024 * 1024 * 768));
}

TEST_CASE("tokens are micro_batch * seq_len, and seq_len may be shortened") {
  auto m = preset("llama2-7b");
  TrainingShape shape;
  shape.micro_batch = 4;
  shape.seq_len = 1024;
  auto u = fsdp_units(m, WrapPolicy::Size, shape);
  CHECK(unit_named(u, "layers.0.mlp.down").forward_flops == doctest::Approx(2.0 * 4096 * 11008 * 4096));
}

TEST_CASE("a longer sequence than GPT-2's learned positions is refused") {
  TrainingShape shape;
  shape.seq_len = 2048;
  CHECK_THROWS_WITH_AS(fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape),
                       doctest::Contains("2048 is longer than model 'gpt2-124m''s 1024 learned positions"),
                       InputError);
}

TEST_CASE("model: a preset name, a preset with overrides, or a full shape") {
  CHECK(load("model: llama2-7b\n").name == "llama2-7b");

  auto m = load("model:\n  preset: llama2-7b\n  seq_len: 2048\n");
  CHECK(m.seq_len == 2048);
  CHECK(m.hidden == 4096);
  CHECK(parameter_count(m) == 6'738'415'616);
  CHECK(m.source.find("changed at t.yaml:2") != std::string::npos);

  // Without GQA the KV heads follow the heads.
  auto wide = load("model:\n  preset: gpt2-124m\n  heads: 16\n");
  CHECK(wide.kv_heads == 16);
  // With GQA they stay.
  CHECK(load("model:\n  preset: llama2-70b\n  heads: 32\n").kv_heads == 8);

  auto full = load(
      "model:\n"
      "  name: my-gpt2\n"
      "  layers: 12\n"
      "  hidden: 768\n"
      "  heads: 12\n"
      "  vocab: 50257\n"
      "  tied_embeddings: true\n"
      "  seq_len: 1024\n"
      "  learned_positions: 1024\n"
      "  norm: layernorm\n"
      "  bias: true\n");
  CHECK(full.name == "my-gpt2");
  CHECK(full.kv_heads == 12);
  CHECK(full.ffn == 3072);  // 4 * hidden unless given
  CHECK(parameter_count(full) == 124'439'808);

  auto swiglu = load(
      "model:\n  layers: 2\n  hidden: 256\n  heads: 4\n  kv_heads: 2\n  ffn: 688\n  gated_mlp: yes\n"
      "  vocab: 1000\n  seq_len: 128\n  norm: rmsnorm\n");
  CHECK(swiglu.gated_mlp);
  CHECK(swiglu.norm == Norm::RMSNorm);
  CHECK(swiglu.name == "custom");
}

TEST_CASE("bad model input names the file, line and key") {
  CHECK_THROWS_WITH_AS(load("model:\n  layers: 12\n  hidn: 768\n"),
                       doctest::Contains("t.yaml:3: model.hidn: unknown key (did you mean 'hidden'?)"), InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  layers: twelve\n"),
                       doctest::Contains("t.yaml:3: model.layers: expected an integer, got 'twelve'"), InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  bias: maybe\n"),
                       doctest::Contains("t.yaml:3: model.bias: expected true, false or qkv (biases on q, k and v "
                                         "only, as Qwen2's), got 'maybe'"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  norm: batchnorm\n"),
                       doctest::Contains("t.yaml:3: model.norm: expected one of: layernorm, rmsnorm"), InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  layers: 0\n"),
                       doctest::Contains("t.yaml:3: model.layers: expected an integer >= 1, got 0"), InputError);
  // A typo's extra zeros are refused before they build millions of units.
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  layers: 100000000\n"),
                       doctest::Contains("t.yaml:3: model.layers: expected an integer <= 16384, got 100000000"),
                       InputError);
  CHECK_NOTHROW(load("model:\n  preset: gpt2-124m\n  layers: 16384\n"));
  CHECK_THROWS_WITH_AS(load("model:\n  - gpt2-124m\n"), doctest::Contains("t.yaml:2: model: expected a preset name"),
                       InputError);
}

TEST_CASE("shape checks point at the key the user wrote") {
  CHECK_THROWS_WITH_AS(
      load("model:\n  name: odd\n  layers: 32\n  hidden: 4096\n  heads: 48\n  vocab: 32000\n  seq_len: 2048\n"),
      doctest::Contains("t.yaml:5: model.heads: 48 heads do not divide hidden size 4096"), InputError);
  // heads came from the preset, so the blame goes to the hidden size.
  CHECK_THROWS_WITH_AS(load("model:\n  preset: llama2-7b\n  hidden: 4100\n"),
                       doctest::Contains("t.yaml:3: model.hidden: 32 heads do not divide hidden size 4100"),
                       InputError);
  // A model whose heads are not hidden / heads wide says so with head_dim.
  CHECK_NOTHROW(load("model:\n  name: odd\n  layers: 32\n  hidden: 4096\n  heads: 48\n  head_dim: 128\n"
                     "  vocab: 32000\n  seq_len: 2048\n"));
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  qk_norm: true\n"),
                       doctest::Contains("t.yaml:3: model.qk_norm: q and k norms need separate q and k Linears"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: llama2-7b\n  head_dim: 0\n"),
                       doctest::Contains("t.yaml:3: model.head_dim: expected an integer >= 1, got 0"), InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: llama2-70b\n  kv_heads: 7\n"),
                       doctest::Contains("t.yaml:3: model.kv_heads: 7 KV heads do not divide 64 heads"), InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt2-124m\n  seq_len: 2048\n"),
                       doctest::Contains("t.yaml:3: model.seq_len: seq_len 2048 is longer than the 1024 learned"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  layers: 2\n  hidden: 64\n"),
                       doctest::Contains("t.yaml:2: model: missing required key 'heads'"), InputError);
  CHECK_THROWS_WITH_AS(
      load("model:\n  layers: 2\n  hidden: 64\n  heads: 4\n  gated_mlp: true\n  vocab: 10\n  seq_len: 8\n"),
      doctest::Contains("missing required key 'ffn'"), InputError);
}

TEST_CASE("unknown presets are refused with the list and a near miss") {
  CHECK_THROWS_WITH_AS(load("model: llama2-7bb\n"),
                       doctest::Contains("t.yaml:1: model: unknown model preset 'llama2-7bb' (did you mean 'llama2-7b'?)"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("model:\n  preset: gpt3\n  seq_len: 8\n"),
                       doctest::Contains("t.yaml:2: model.preset: unknown model preset 'gpt3'; expected one of:"),
                       InputError);
}

TEST_CASE("validate checks configs built in code, prefixed with what they are") {
  auto m = preset("gpt2-124m");
  m.heads = 5;
  CHECK_THROWS_WITH_AS(validate(m, "bench config"),
                       doctest::Contains("bench config: heads: 5 heads do not divide hidden size 768"), InputError);
  m = preset("llama3.1-8b");
  m.kv_heads = 0;
  CHECK_THROWS_WITH_AS(validate(m, "x"), doctest::Contains("x: kv_heads: expected an integer >= 1, got 0"), InputError);
}

TEST_CASE("unit kinds print as snake_case words") {
  CHECK(std::string(to_string(UnitKind::AttentionQKV)) == "attention_qkv");
  CHECK(std::string(to_string(UnitKind::LmHead)) == "lm_head");
  CHECK(std::string(to_string(UnitKind::Block)) == "block");
}
