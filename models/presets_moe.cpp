// The mixtures of experts among the published model shapes (presets.cpp has the dense ones): each
// source string says where the numbers come from and which parameter count they reproduce.
#include "models/preset_makers.hpp"

#include <fmt/format.h>

namespace tagcsim::models::detail {
namespace {

// DeepSeek-V2/V3: latent attention (kv_lora_rank 512, q and k heads of 128 + 64 rotary, v of 128),
// the first dense_layers blocks dense, the rest a mixture of experts with shared ones; the sequence
// 4096 (torchtitan's training configs').
TransformerConfig deepseek(std::string name, int layers, int hidden, int heads, int q_lora_rank, std::int64_t dense_ffn,
                           std::int64_t expert_ffn, int experts, int shared, int top_k, int dense_layers,
                           std::int64_t vocab, std::string source) {
  auto m = llama(std::move(name), layers, hidden, heads, heads, expert_ffn, vocab, 4096, std::move(source));
  m.head_dim = 128 + 64;
  m.rope_head_dim = 64;
  m.v_head_dim = 128;
  m.kv_lora_rank = 512;
  m.q_lora_rank = q_lora_rank;
  m.experts = experts;
  m.experts_per_token = top_k;
  m.shared_experts = shared;
  m.dense_layers = dense_layers;
  m.dense_ffn = dense_ffn;
  return m;
}

// Qwen3's mixtures of experts: the dense models' attention (4 KV heads here), every block's MLP a
// router and 128 SwiGLU experts of which a token runs 8. Shapes as torchtitan's qwen3_configs at
// b5bcd76 (its MoE configs came after cfb9326).
TransformerConfig qwen3_moe(const std::string& flavor, int layers, int hidden, int heads, std::int64_t expert_ffn,
                            const std::string& parameters, const std::string& active) {
  TransformerConfig m = llama("qwen3-" + lowercase(flavor), layers, hidden, heads, 4, expert_ffn, 151936, 4096,
                              fmt::format("Qwen Team 2025 (Qwen3 technical report); pytorch/torchtitan "
                                          "torchtitan/models/qwen3/__init__.py @b5bcd76 qwen3_configs['{}'] (dim {}, "
                                          "{} layers, {} heads of 128, 4 KV heads, qk_norm, 128 experts of {}, top 8, "
                                          "vocab 151936, untied; the sequence as the dense presets'): {} parameters, "
                                          "{} a token uses",
                                          flavor, hidden, layers, heads, expert_ffn, parameters, active));
  m.head_dim = 128;
  m.qk_norm = true;
  m.experts = 128;
  m.experts_per_token = 8;
  return m;
}

// gpt-oss (OpenAI 2025): a mixture of experts of Llama's layout with biases on q, k and v, 64 heads
// of 64 (q 4096 wide over a 2880-wide stream), 8 KV heads, SwiGLU experts as wide as the stream with
// biases and the clamped SwiGLU (limit 7), 4 of E a token, the attention sinks (one logit a head),
// a 128-token sliding window in every other block (the first one local), the o200k_harmony
// vocabulary of 201,088, untied; pretrained at 4,096 tokens before YaRN. Not modelled, 0.0003% of
// the parameters and one bias gradient's reduction each: the biases on the out projection and the
// router.
TransformerConfig gpt_oss(const std::string& size, int layers, int experts, const std::string& parameters,
                          const std::string& unmodelled) {
  TransformerConfig m = llama("gpt-oss-" + size, layers, 2880, 64, 8, 2880, 201088, 4096,
                              fmt::format("OpenAI 2025 (gpt-oss-120b & gpt-oss-20b model card, arXiv 2508.10925); "
                                          "openai/gpt-oss-{} config.json (hidden 2880, {} layers, 64/8 heads of 64, "
                                          "{} experts of 2880 with biases, top 4, swiglu_limit 7.0, attention sinks, "
                                          "sliding window 128 every other layer, vocab 201088, attention_bias): {} "
                                          "parameters, {} of them (biases on the out projection and the router) not "
                                          "modelled",
                                          size, layers, experts, parameters, unmodelled));
  m.head_dim = 64;
  m.qkv_bias = true;
  m.expert_bias = true;
  m.swiglu_limit = 7.0;
  m.attention_sinks = true;
  m.experts = experts;
  m.experts_per_token = 4;
  m.sliding_window = 128;
  m.full_attention_every = 2;
  return m;
}

// Llama 4 (Meta 2025), as torchtitan's llama4 flavors 17bx16e and 17bx128e build it
// (torchtitan/models/llama4/__init__.py and model/model.py @cbdb311): Llama's layout, 40 heads of
// 128 over a 5120-wide stream, 8 KV heads, the vocabulary of 202,048, untied; each MoE block a
// sigmoid router choosing 1 of E SwiGLU experts and one shared expert beside it, each of 8192
// (16384, the dense MLP's width, over top_k + shared = 2, auto_scale_hidden_dim); Maverick's MoE
// blocks every second one (interleave_moe_layer_step 2), the others a dense MLP of 16384. The
// attention is causal over the whole sequence, as those flavors run SDPA; the released models'
// chunked attention (8192-token chunks, every fourth block global without RoPE) and q/k norms are
// torchtitan's _irope flavors, not these. Not modelled: the router's scores multiplying the tokens
// before the experts (score_before_experts), one element-wise kernel.
TransformerConfig llama4(const std::string& name, int experts, int moe_every, const std::string& parameters,
                         const std::string& active, const std::string& card) {
  TransformerConfig m = llama(name, 48, 5120, 40, 8, 8192, 202048, 8192,
                              fmt::format("Meta 2025 (Llama 4 model card: {}); pytorch/torchtitan "
                                          "torchtitan/models/llama4/__init__.py @cbdb311 '17bx{}e' (dim 5120, 48 "
                                          "layers, 40/8 heads of 128, {} experts of 8192, top 1, 1 shared, {}, vocab "
                                          "202048, untied; causal SDPA, no q/k norms; seq_len 8192 as its train "
                                          "configs): {} parameters, {} a token uses",
                                          card, experts, experts,
                                          moe_every > 1 ? "MoE every second block, the others a dense MLP of 16384"
                                                        : "MoE in every block",
                                          parameters, active));
  m.experts = experts;
  m.experts_per_token = 1;
  m.shared_experts = 1;
  m.moe_every = moe_every;
  if (moe_every > 1) m.dense_ffn = 16384;
  return m;
}

}  // namespace

PresetTable moe_presets() {
  return {
      // The model cards say 30.5B total / 3.3B activated and 235B / 22B.
      {"qwen3-30b-a3b", [] { return qwen3_moe("30B-A3B", 48, 2048, 32, 768, "30,532,122,624", "3,353,032,704"); }},
      {"qwen3-235b-a22b",
       [] { return qwen3_moe("235B-A22B", 94, 4096, 64, 1536, "235,093,634,560", "22,190,763,520"); }},
      {"gpt-oss-20b", [] { return gpt_oss("20b", 24, 32, "20,914,757,184", "69,888"); }},
      {"gpt-oss-120b", [] { return gpt_oss("120b", 36, 128, "116,829,156,672", "108,288"); }},
      {"mixtral-8x7b",
       [] {
         auto m = llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096,
                        "Jiang et al. 2024 (Mixtral of Experts, Table 1: 8 experts, top 2, full attention); "
                        "mistralai/Mixtral-8x7B-v0.1 config.json (dim 4096, 32 layers, 32/8 heads, experts of 14336, "
                        "vocab 32000, untied); the sequence 4096, the paper's 32k context being its limit: "
                        "46,702,792,704 parameters, 12,879,925,248 a token uses");
         m.experts = 8;
         m.experts_per_token = 2;
         return m;
       }},
      // DeepSeek's latent attention and mixture of experts, as torchtitan's deepseek_v3 configs have them.
      {"deepseek-v2-lite",
       [] {
         return deepseek("deepseek-v2-lite", 27, 2048, 16, 0, 10944, 1408, 64, 2, 6, 1, 102400,
                         "DeepSeek-AI 2024 (DeepSeek-V2, DeepSeek-V2-Lite: 15.7B parameters, 2.4B activated); "
                         "pytorch/torchtitan torchtitan/models/deepseek_v3/__init__.py @0014ac2 _16b (dim 2048, 27 "
                         "layers, 1 dense of 10944, 16 heads, q direct, kv_lora_rank 512, qk 128 + 64 rotary, v 128, "
                         "64 experts of 1408, top 6, 2 shared, vocab 102400, untied): 15,706,484,224 parameters, "
                         "2,661,150,208 a token uses (2.45B without the token embedding)");
       }},
      {"deepseek-v3-671b",
       [] {
         return deepseek("deepseek-v3-671b", 61, 7168, 128, 1536, 18432, 2048, 256, 1, 8, 3, 129280,
                         "DeepSeek-AI 2024 (DeepSeek-V3 technical report: 671B parameters, 37B activated; the "
                         "multi-token prediction module left out); pytorch/torchtitan torchtitan/models/deepseek_v3/"
                         "__init__.py @0014ac2 _671b (dim 7168, 61 layers, 3 dense of 18432, 128 heads, q_lora_rank "
                         "1536, kv_lora_rank 512, qk 128 + 64 rotary, v 128, 256 experts of 2048, top 8, 1 shared, "
                         "vocab 129280, untied): 671,026,404,352 parameters, 37,552,282,624 a token uses");
       }},
      {"llama4-scout-17b-16e",
       [] {
         return llama4("llama4-scout-17b-16e", 16, 1, "107,769,861,120", "17,172,894,720",
                       "17B active, 109B total for the released multimodal model");
       }},
      {"llama4-maverick-17b-128e",
       [] {
         return llama4("llama4-maverick-17b-128e", 128, 2, "400,711,848,960", "17,184,691,200",
                       "17B active, 400B total");
       }},
  };
}

}  // namespace tagcsim::models::detail
