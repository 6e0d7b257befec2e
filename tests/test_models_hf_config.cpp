// `model: {hf_config: PATH}`: a model's shape from its Hugging Face config.json. Each case writes
// the fields a model's published config.json gives (only those tagcsim reads, and a few it must
// ignore) and checks the shape against the preset built from the same model card: the same
// parameter count, to the parameter, and the same step time.
#include "models/model.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/step.hpp"
#include "scratch_dir.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace tagcsim;
using doctest::Contains;

namespace {

// Each case's config files, in a folder of its own.
struct Dir : test::ScratchDir {
  Dir() : ScratchDir("hf") {}
};

models::TransformerConfig from_json(const Dir& d, const std::string& json) {
  return models::model_from_hf_config(Input::load_file(d.write("m/config.json", json)));
}

}  // namespace

TEST_CASE("hf_config: Llama 3.1 8B, Mistral 7B v0.1, Qwen2.5 0.5B and GPT-2 come out as their presets") {
  Dir d;
  const auto llama = from_json(d, R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false,
    "hidden_act": "silu", "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}})");
  CHECK(models::parameter_count(llama) == 8'030'261'248);
  CHECK(models::parameter_count(llama) == models::parameter_count(models::preset("llama3.1-8b")));
  CHECK(llama.seq_len == 4096);  // the pretraining context, not the 131,072 positions RoPE reaches
  CHECK(llama.norm == models::Norm::RMSNorm);
  CHECK(llama.head_dim == 0);  // hidden / heads

  const auto mistral = from_json(d, R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "max_position_embeddings": 32768, "sliding_window": 4096, "tie_word_embeddings": false})");
  CHECK(mistral.sliding_window == 4096);
  CHECK(models::parameter_count(mistral) == models::parameter_count(models::preset("mistral-7b-v0.1")));

  const auto qwen = from_json(d, R"({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
    "max_position_embeddings": 32768, "tie_word_embeddings": true, "use_sliding_window": false,
    "sliding_window": 32768, "max_window_layers": 21})");
  CHECK(qwen.qkv_bias);
  CHECK(qwen.sliding_window == 0);  // use_sliding_window: false
  CHECK(models::parameter_count(qwen) == 494'032'768);

  const auto gpt2 = from_json(d, R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_positions": 1024, "n_inner": null, "vocab_size": 50257, "activation_function": "gelu_new"})");
  CHECK(models::parameter_count(gpt2) == models::parameter_count(models::preset("gpt2-124m")));
  CHECK(gpt2.learned_positions == 1024);
  CHECK(gpt2.tied_embeddings);

  const auto olmo = from_json(d, R"({"model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352,
    "max_position_embeddings": 4096, "tie_word_embeddings": false})");
  CHECK(olmo.qk_norm);
  CHECK(models::parameter_count(olmo) == models::parameter_count(models::preset("olmo2-7b")));
  const auto mixtral = from_json(d, R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null, "max_position_embeddings": 32768})");
  CHECK(mixtral.sliding_window == 0);
  CHECK(models::parameter_count(mixtral) == models::parameter_count(models::preset("mixtral-8x7b")));
  // Phi-3 mini (4k): its fused qkv_proj and gate_up_proj hold what Llama's separate ones do.
  const auto phi3 = from_json(d, R"({"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
    "max_position_embeddings": 4096, "sliding_window": 2047, "tie_word_embeddings": false})");
  CHECK(models::parameter_count(phi3) == 3'821'079'552);
  CHECK(phi3.sliding_window == 2047);
}

TEST_CASE("hf_config: mixtures of experts and latent attention, Qwen3-30B-A3B and DeepSeek-V3") {
  Dir d;
  const auto qwen = from_json(d, R"({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "norm_topk_prob": true, "vocab_size": 151936, "max_position_embeddings": 40960,
    "tie_word_embeddings": false})");
  CHECK(qwen.qk_norm);
  CHECK(qwen.head_dim == 128);
  CHECK(models::parameter_count(qwen) == 30'532'122'624);
  CHECK(models::active_parameter_count(qwen) == models::active_parameter_count(models::preset("qwen3-30b-a3b")));

  // DeepSeek-V3: q and k heads of 128 + 64 rotary, the first 3 blocks dense (18432), then 256
  // routed experts of 2048 (8 a token) and 1 shared; its multi-token prediction module not counted.
  const auto v3 = from_json(d, R"({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "n_group": 8, "topk_group": 4,
    "num_nextn_predict_layers": 1, "vocab_size": 129280, "max_position_embeddings": 163840,
    "tie_word_embeddings": false})");
  CHECK(models::parameter_count(v3) == 671'026'404'352);
  CHECK(v3.dense_layers == 3);
  CHECK(v3.dense_ffn == 18432);
  // V2-Lite: no q latent (q_lora_rank null), 64 experts of 1408 (6 a token) and 2 shared.
  const auto lite = from_json(d, R"({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
    "n_shared_experts": 2, "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "kv_lora_rank": 512, "q_lora_rank": null, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
    "vocab_size": 102400, "tie_word_embeddings": false})");
  CHECK(models::parameter_count(lite) == models::parameter_count(models::preset("deepseek-v2-lite")));
}

TEST_CASE("hf_config: Qwen1.5-MoE-A2.7B's gated shared expert and GLM-4.5-Air's biased, partly dense MoE") {
  Dir d;
  // Qwen1.5-MoE-A2.7B: 24 blocks of 60 experts of 1408 (4 a token) and a shared expert of 5632 (4
  // experts' worth) behind a gate Linear 2048 -> 1; Qwen2's q, k, v biases. By hand, a block: q, k, v
  // 3 x 2048^2 + 3 x 2048 biases, out 2048^2 (16,783,360), 2 norms (4,096), router and gate 2048 x 61
  // (124,928), 64 experts of 3 x 2048 x 1408 (553,648,128): 570,560,512; x 24, the embedding and the
  // head 2 x 151936 x 2048 and the final norm: 14,315,784,192 ("14.3B").
  const auto qwen = from_json(d, R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": false, "use_sliding_window": false,
    "vocab_size": 151936, "max_position_embeddings": 8192, "tie_word_embeddings": false})");
  CHECK(qwen.qkv_bias);
  CHECK(qwen.shared_experts == 4);
  CHECK(qwen.shared_expert_gate);
  CHECK(qwen.dense_ffn == 0);
  CHECK(models::parameter_count(qwen) == 14'315'784'192);
  // Written out as a scenario's model (tagcsim run --resolved), the gate comes back.
  const std::string yaml = scenarios::model_yaml(qwen);
  CHECK(yaml.find("shared_expert_gate: true") != std::string::npos);
  const auto again = scenarios::parse_scenario(yaml + "cluster: dgx-h100-ib400\npolicies: [fsdp]\n", "r.yaml");
  CHECK(models::parameter_count(again.points.at(0).setup.model) == 14'315'784'192);
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: {preset: qwen3-30b-a3b, shared_expert_gate: true}\n"
                                                 "cluster: dgx-h100-ib400\npolicies: [fsdp]\n",
                                                 "g.yaml"),
                       Contains("g.yaml:1: model.shared_expert_gate: a gate on the shared experts needs "
                                "shared_experts > 0"),
                       InputError);
  // GLM-4.5-Air: 96 q heads of 128 over 8 KV heads with q, k, v biases (no q/k norms), block 0 dense
  // (10944), then 45 blocks of 128 experts of 1408 (8 a token) and 1 shared. By hand: attention
  // 2 x 4096 x 12288 + 2 x 4096 x 1024 + 14,336 biases (109,066,240), 2 norms (8,192); block 0's MLP
  // 3 x 4096 x 10944 (134,479,872); an MoE block's router 4096 x 128 and 129 experts of
  // 3 x 4096 x 1408 (2,232,418,304); embedding and head 2 x 151552 x 4096, final norm 4096:
  // 106,852,245,504 (its multi-token prediction layer not counted).
  const auto glm = from_json(d, R"({"model_type": "glm4_moe", "hidden_size": 4096, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8,
    "head_dim": 128, "n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 1.0,
    "partial_rotary_factor": 0.5, "attention_bias": true, "use_qk_norm": false, "num_nextn_predict_layers": 1,
    "vocab_size": 151552, "max_position_embeddings": 131072, "tie_word_embeddings": false})");
  CHECK(glm.qkv_bias);
  CHECK(!glm.qk_norm);
  CHECK(glm.head_dim == 128);
  CHECK(glm.dense_layers == 1);
  CHECK(glm.dense_ffn == 10944);
  CHECK(models::parameter_count(glm) == 106'852'245'504);
}

TEST_CASE("hf_config: Gemma 2 2B, and Gemma 3's language model under text_config") {
  Dir d;
  const auto g2 = from_json(d, R"({"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "vocab_size": 256000, "sliding_window": 4096, "final_logit_softcapping": 30.0,
    "attn_logit_softcapping": 50.0, "query_pre_attn_scalar": 256, "max_position_embeddings": 8192})");
  CHECK(models::parameter_count(g2) == 2'614'341'888);
  CHECK(g2.logit_softcap);
  CHECK(g2.full_attention_every == 2);
  // Gemma 3 4B's config counts 262,208 tokens, 64 more than the preset's keras-hub count: 64 x 2560 more.
  const auto g3 = from_json(d, R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
    "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208, "sliding_window": 1024,
    "sliding_window_pattern": 6, "max_position_embeddings": 131072}, "vision_config": {"hidden_size": 1152}})");
  CHECK(models::parameter_count(g3) == models::parameter_count(models::preset("gemma3-4b")) + 64 * 2560);
  CHECK(g3.qk_norm);
  CHECK(g3.full_attention_every == 6);
  CHECK(g3.sliding_window == 1024);
}

TEST_CASE("hf_config in a scenario: relative to the scenario file, overridable, the preset's step time") {
  Dir d;
  d.write("cfg/llama/config.json", R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": false, "_name_or_path": "meta-llama/Llama-3.1-8B"})");
  const std::string rest = "cluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining: {framework: torchtitan, seq_len: "
                           "8192}\npolicies: [fsdp]\n";
  const auto from_file = scenarios::load_scenario(
      d.write("s/hf.yaml", "model: {hf_config: ../cfg/llama/config.json, seq_len: 8192}\n" + rest));
  const auto from_preset = scenarios::load_scenario(d.write("s/preset.yaml", "model: llama3.1-8b\n" + rest));
  CHECK(from_file.points.at(0).setup.model.name == "meta-llama/Llama-3.1-8B");
  CHECK(sim::simulate_fsdp(from_file.points.at(0).setup).step_time_s ==
        sim::simulate_fsdp(from_preset.points.at(0).setup).step_time_s);
  // An override applies on top of the config, as on a preset.
  const auto wider = scenarios::load_scenario(
      d.write("s/wider.yaml", "model: {hf_config: ../cfg/llama/config.json, layers: 16}\n" + rest));
  CHECK(wider.points.at(0).setup.model.layers == 16);
}

TEST_CASE("bad input: hf_config's file, architecture and fields, with file and line") {
  Dir d;
  const std::string rest = "cluster: dgx-h100-ib400\npolicies: [fsdp]\n";
  CHECK_THROWS_WITH_AS(scenarios::load_scenario(d.write("a.yaml", "model: {hf_config: nowhere.json}\n" + rest)),
                       Contains("a.yaml:1: model.hf_config: no such Hugging Face config 'nowhere.json'"), InputError);
  d.write("falcon/config.json", "{\"model_type\": \"falcon\",\n \"hidden_size\": 3072}\n");
  CHECK_THROWS_WITH_AS(scenarios::load_scenario(d.write("b.yaml", "model: {hf_config: falcon/config.json}\n" + rest)),
                       Contains("falcon/config.json:1: model_type: 'falcon' is not an architecture tagcsim reads (gpt2, "
                                "llama"),
                       InputError);
  d.write("biased/config.json", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128,\n"
                                " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 100,\n"
                                " \"attention_bias\": true}\n");
  CHECK_THROWS_WITH_AS(scenarios::load_scenario(d.write("c.yaml", "model: {hf_config: biased/config.json}\n" + rest)),
                       Contains("biased/config.json:3: attention_bias: biases on every attention projection are not "
                                "modelled"),
                       InputError);
  d.write("qmoe/config.json", "{\"model_type\": \"qwen2_moe\", \"hidden_size\": 64, \"intermediate_size\": 128,\n"
                              " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 100,\n"
                              " \"moe_intermediate_size\": 32, \"num_experts\": 4, \"num_experts_per_tok\": 2,\n"
                              " \"shared_expert_intermediate_size\": 48}\n");
  CHECK_THROWS_WITH_AS(scenarios::load_scenario(d.write("d.yaml", "model: {hf_config: qmoe/config.json}\n" + rest)),
                       Contains("qmoe/config.json:4: shared_expert_intermediate_size: a shared expert of 48 is not a "
                                "whole number of experts of moe_intermediate_size 32"),
                       InputError);
  d.write("short/config.json", "{\"model_type\": \"llama\", \"num_hidden_layers\": 2}\n");
  CHECK_THROWS_WITH_AS(scenarios::load_scenario(d.write("e.yaml", "model: {hf_config: short/config.json}\n" + rest)),
                       Contains("short/config.json:1"), InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::load_scenario(d.write("f.yaml", "model: {preset: llama3.1-8b, hf_config: short/config.json}\n" + rest)),
      Contains("f.yaml:1: model.hf_config: a model comes from a preset or from a Hugging Face config, not both"),
      InputError);
}

TEST_CASE("hf_config: gpt-oss-20b comes out as its preset, its window in every other block") {
  Dir d;
  const auto oss = from_json(d, R"({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4, "vocab_size": 201088,
    "sliding_window": 128, "attention_bias": true, "tie_word_embeddings": false, "max_position_embeddings": 131072,
    "initial_context_length": 4096, "swiglu_limit": 7.0, "router_aux_loss_coef": 0.9,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]})");
  CHECK(models::parameter_count(oss) == models::parameter_count(models::preset("gpt-oss-20b")));
  CHECK(oss.head_dim == 64);
  CHECK(oss.sliding_window == 128);
  CHECK(oss.full_attention_every == 2);
  CHECK(oss.seq_len == 4096);
  CHECK(oss.expert_bias);
  CHECK(oss.attention_sinks);
  CHECK(oss.swiglu_limit == 7.0);
  CHECK_THROWS_WITH_AS(from_json(d, R"({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088, "swiglu_limit": -1})"),
                       Contains("config.json:3: swiglu_limit: expected the clamped SwiGLU's limit (> 0), got -1"),
                       InputError);
  CHECK_THROWS_WITH_AS(from_json(d, R"({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088, "sliding_window": 128,
    "layer_types": ["full_attention", "sliding_attention"]})"),
                       Contains("config.json:4: layer_types[0]: expected sliding_attention and full_attention alternating"),
                       InputError);
}

TEST_CASE("hf_config: Llama 4 Maverick's text_config, the torchtitan preset plus its q/k norms, chunks refused past one") {
  Dir d;
  // The fields of meta-llama/Llama-4-Maverick-17B-128E's config.json that tagcsim reads, under
  // text_config as the released file has them (and some it ignores).
  const std::string maverick = R"({"model_type": "llama4", "text_config": {"model_type": "llama4_text",
    "hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_hidden_layers": 48,
    "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048,
    "num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "use_qk_norm": true,
    "attention_chunk_size": 8192, "max_position_embeddings": 1048576, "tie_word_embeddings": false,
    "rope_theta": 500000.0, "router_aux_loss_coef": 0.001},
    "vision_config": {"hidden_size": 1408}})";
  const auto m = from_json(d, maverick);
  CHECK(m.experts == 128);
  CHECK(m.experts_per_token == 1);
  CHECK(m.shared_experts == 1);
  CHECK(m.moe_every == 2);
  CHECK(m.dense_ffn == 16384);
  CHECK(m.attention_chunk == 8192);
  CHECK(m.seq_len == 4096);
  // torchtitan's flavor has no q/k norms; the released model's weigh 2 x 128 a block.
  CHECK(models::parameter_count(m) == models::parameter_count(models::preset("llama4-maverick-17b-128e")) + 48 * 256);

  // Up to one chunk the attention is causal; past it the scenario is refused where the length is set.
  d.write("l4/config.json", maverick);
  const std::string head = "model: {hf_config: l4/config.json}\ncluster: {preset: dgx-h100-ib400, nodes: 32}\n";
  const auto ok = scenarios::load_scenario(d.write("ok.yaml", head + "training: {framework: torchtitan, seq_len: 8192, "
                                                                     "expert_parallel: 8}\npolicies: [fsdp]\n"));
  CHECK(ok.points.at(0).setup.seq_len() == 8192);
  CHECK(scenarios::resolved_yaml(ok).find("attention_chunk: 8192") != std::string::npos);
  CHECK_THROWS_WITH_AS(
      scenarios::load_scenario(d.write("long.yaml", head + "training:\n  framework: torchtitan\n  seq_len: 16384\n")),
      Contains("long.yaml:5: training.seq_len: sequence length 16384 exceeds the model's attention chunk of 8192 "
               "tokens"),
      InputError);
  CHECK_THROWS_WITH_AS(scenarios::load_scenario(d.write("longm.yaml", "model: {hf_config: l4/config.json, seq_len: "
                                                                      "32768}\ncluster: dgx-h100-ib400\n")),
                       Contains("longm.yaml:1: model.seq_len: sequence length 32768 exceeds"), InputError);
  // A mixture of experts laid out otherwise than every interleave_moe_layer_step-th block.
  CHECK_THROWS_WITH_AS(from_json(d, R"({"model_type": "llama4_text", "hidden_size": 64, "intermediate_size": 32,
    "intermediate_size_mlp": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100,
    "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
    "moe_layers": [0, 2]})"),
                       Contains("config.json:4: moe_layers: expected the blocks interleave_moe_layer_step 2 gives the experts (1, 3, ..."), InputError);
}
