// Reading `model:` from a scenario, checking a shape, counting its parameters.
#include "models/model.hpp"
#include "models/shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string_view>

namespace tagcsim::models {
namespace {

// Reports a bad shape. `keys` are the fields involved, the one most likely at
// fault first; a YAML reader points at the first of them the user wrote.
using Complain = std::function<void(std::initializer_list<std::string_view> keys, const std::string& what)>;

constexpr int kMaxLayers = 16384;

void check(const TransformerConfig& m, const Complain& complain) {
  if (m.name.empty()) complain({"name"}, "must not be empty");
  auto at_least = [&](std::string_view key, std::int64_t v, std::int64_t min) {
    if (v < min) complain({key}, fmt::format("expected an integer >= {}, got {}", min, v));
  };
  at_least("layers", m.layers, 1);
  // The deepest published models have a few hundred blocks; the cap keeps a typo (an extra zero or
  // six) from building millions of units until memory runs out.
  if (m.layers > kMaxLayers) complain({"layers"}, fmt::format("expected an integer <= {}, got {}", kMaxLayers, m.layers));
  at_least("hidden", m.hidden, 1);
  at_least("heads", m.heads, 1);
  at_least("kv_heads", m.kv_heads, 1);
  at_least("ffn", m.ffn, 1);
  at_least("vocab", m.vocab, 1);
  at_least("seq_len", m.seq_len, 1);
  at_least("learned_positions", m.learned_positions, 0);
  at_least("head_dim", m.head_dim, 0);
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    complain({"heads", "hidden"}, fmt::format("{} heads do not divide hidden size {} (a model whose heads are not "
                                              "hidden / heads wide sets head_dim)",
                                              m.heads, m.hidden));
  if (m.qk_norm && !detail::llama_layout(m))
    complain({"qk_norm"}, "q and k norms need separate q and k Linears (a gated MLP or grouped-query attention); "
                          "this shape fuses q, k and v");
  at_least("sliding_window", m.sliding_window, 0);
  at_least("full_attention_every", m.full_attention_every, 0);
  at_least("attention_chunk", m.attention_chunk, 0);
  if (m.full_attention_every > 0 && m.sliding_window == 0)
    complain({"full_attention_every", "sliding_window"},
             "full_attention_every interleaves full-attention blocks among windowed ones: set sliding_window too");
  if (m.heads % m.kv_heads != 0)
    complain({"kv_heads", "heads"}, fmt::format("{} KV heads do not divide {} heads", m.kv_heads, m.heads));
  at_least("kv_lora_rank", m.kv_lora_rank, 0);
  at_least("q_lora_rank", m.q_lora_rank, 0);
  if (m.kv_lora_rank > 0) {  // multi-head latent attention
    if (m.head_dim <= 0 || m.rope_head_dim < 1 || m.rope_head_dim >= m.head_dim)
      complain({m.head_dim <= 0 ? "head_dim" : "rope_head_dim", "kv_lora_rank"},
               fmt::format("latent attention needs head_dim (q's and k's width a head) and a rope_head_dim between 1 "
                           "and head_dim - 1; got head_dim {}, rope_head_dim {}",
                           m.head_dim, m.rope_head_dim));
    if (m.v_head_dim < 1) complain({"v_head_dim", "kv_lora_rank"}, "latent attention needs v_head_dim (V's width a head)");
    if (m.kv_heads != m.heads)
      complain({"kv_heads", "kv_lora_rank"}, "latent attention gives every head its own K and V: kv_heads = heads");
    if (m.qk_norm || m.bias || m.qkv_bias || m.norm != Norm::RMSNorm)
      complain({m.qk_norm ? "qk_norm" : m.norm != Norm::RMSNorm ? "norm" : "bias", "kv_lora_rank"},
               "latent attention is modelled as DeepSeek's: RMSNorm, no biases, no q/k norms");
  } else if (m.q_lora_rank != 0 || m.rope_head_dim != 0 || m.v_head_dim != 0) {
    complain({m.q_lora_rank != 0 ? "q_lora_rank" : m.rope_head_dim != 0 ? "rope_head_dim" : "v_head_dim",
              "kv_lora_rank"},
             "only latent attention has it: set kv_lora_rank too");
  }
  at_least("experts", m.experts, 0);
  at_least("shared_experts", m.shared_experts, 0);
  if (m.shared_expert_gate && m.shared_experts == 0)
    complain({"shared_expert_gate", "shared_experts"}, "a gate on the shared experts needs shared_experts > 0");
  if (m.experts > 0) {
    if (m.experts < 2) complain({"experts"}, fmt::format("a mixture of experts needs 2 or more experts, got {}", m.experts));
    if (m.experts_per_token < 1 || m.experts_per_token > m.experts)
      complain({"experts_per_token", "experts"},
               fmt::format("expected the experts each token runs, 1 to experts ({}), got {}", m.experts,
                           m.experts_per_token));
    if (!m.gated_mlp) complain({"gated_mlp", "experts"}, "experts are SwiGLU MLPs here: set gated_mlp: true");
    if (m.bias)
      complain({"bias", "experts"},
               "bias: true puts biases on every Linear, which a mixture of experts does not model: set bias: qkv "
               "(biases on q, k and v) and expert_bias: true (on each expert's matrices, as gpt-oss's)");
    if (m.dense_layers < 0 || m.moe_every < 1 || m.dense_ffn < 0 || detail::moe_layers(m) == 0)
      complain({m.dense_layers < 0 || detail::moe_layers(m) == 0 ? "dense_layers" : m.moe_every < 1 ? "moe_every" : "dense_ffn",
                "experts"},
               fmt::format("expected dense_layers >= 0, moe_every >= 1 and dense_ffn >= 0 leaving some of the {} blocks "
                           "with experts; got dense_layers {}, moe_every {}, dense_ffn {}",
                           m.layers, m.dense_layers, m.moe_every, m.dense_ffn));
  } else if (m.expert_bias || m.swiglu_limit != 0) {
    complain({m.expert_bias ? "expert_bias" : "swiglu_limit", "experts"},
             fmt::format("{} is modelled on a mixture of experts' experts (gpt-oss's) only: set experts too",
                         m.expert_bias ? "expert_bias" : "swiglu_limit"));
  } else if (m.experts_per_token != 0 || m.shared_experts != 0 || m.dense_layers != 0 || m.moe_every != 1 ||
             m.dense_ffn != 0) {
    const auto [key, value] = m.experts_per_token != 0 ? std::pair{"experts_per_token", std::int64_t(m.experts_per_token)}
                              : m.shared_experts != 0  ? std::pair{"shared_experts", std::int64_t(m.shared_experts)}
                              : m.dense_layers != 0    ? std::pair{"dense_layers", std::int64_t(m.dense_layers)}
                              : m.moe_every != 1       ? std::pair{"moe_every", std::int64_t(m.moe_every)}
                                                       : std::pair{"dense_ffn", m.dense_ffn};
    complain({key, "experts"}, fmt::format("only a mixture of experts has {} ({}): set experts too, or {}: {} for a dense MLP",
                                           key, value, key, std::string_view(key) == "moe_every" ? "1" : "0"));
  }
  if (!(m.swiglu_limit >= 0))
    complain({"swiglu_limit"}, fmt::format("expected the clamped SwiGLU's limit (gpt-oss: 7.0), or 0 for the plain "
                                           "SwiGLU; got {}",
                                           m.swiglu_limit));
  if (m.swiglu_limit > 0 && m.shared_experts > 0)
    complain({"shared_experts", "swiglu_limit"},
             "the clamped SwiGLU is modelled as gpt-oss runs it, without shared experts: set shared_experts: 0");
  if (m.attention_sinks && detail::mla(m))
    complain({"attention_sinks", "kv_lora_rank"}, "attention sinks are modelled on gpt-oss's attention, not latent attention");
  if (m.learned_positions != 0 && m.learned_positions < m.seq_len)
    complain({"seq_len", "learned_positions"},
             fmt::format("seq_len {} is longer than the {} learned positions (set learned_positions >= seq_len, "
                         "or 0 for rotary/ALiBi)",
                         m.seq_len, m.learned_positions));
}

// A preset name, checked where the user wrote it.
TransformerConfig read_preset(const Input& in) {
  const auto name = resolve_alias(in.as_string(), preset_aliases());
  auto names = preset_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return preset(name);
  in.fail(unknown_name("model preset", name, names, preset_aliases()));
}

int read_int(const Input& in, std::int64_t min) {
  auto v = in.as_int_at_least(min);
  if (v > INT_MAX) in.fail(fmt::format("expected an integer <= {}, got {}", INT_MAX, v));
  return static_cast<int>(v);
}

// `hf_config: PATH`, relative to the file that names it.
TransformerConfig read_hf_config(const Input& v) {
  const std::filesystem::path path = v.beside(v.as_string());
  if (!std::filesystem::is_regular_file(path))
    v.fail(fmt::format("no such Hugging Face config '{}' (looked for {})", v.as_string(), path.string()));
  return model_from_hf_config(Input::load_file(path.lexically_normal().string()));
}

}  // namespace

TransformerConfig load_model(const Input& in) {
  if (in.is_scalar()) {
    auto m = read_preset(in);
    validate(m, in.where());
    return m;
  }
  if (!in.is_map()) in.fail("expected a preset name or a map with the model's shape (or 'preset' plus overrides)");
  in.expect_keys({"preset", "hf_config", "name", "source", "layers", "hidden", "heads", "kv_heads", "head_dim", "qk_norm", "ffn",
                  "gated_mlp", "vocab", "tied_embeddings", "seq_len", "learned_positions", "norm", "bias",
                  "sliding_window", "full_attention_every", "attention_chunk", "post_norms", "logit_softcap", "experts",
                  "experts_per_token", "shared_experts", "shared_expert_gate", "dense_layers", "moe_every", "dense_ffn", "kv_lora_rank",
                  "q_lora_rank", "rope_head_dim", "v_head_dim", "expert_bias", "swiglu_limit", "attention_sinks"});

  TransformerConfig m;
  auto preset_key = in.find("preset");
  if (const auto hf = in.find("hf_config")) {
    if (preset_key) hf->fail("a model comes from a preset or from a Hugging Face config, not both");
    m = read_hf_config(*hf);
    preset_key = hf;  // overrides and checks as for a preset: the config is the base
  } else if (preset_key) {
    m = read_preset(*preset_key);
  } else {
    // A shape from scratch: the numbers without a sensible default are required.
    for (auto key : {"layers", "hidden", "heads", "vocab", "seq_len"}) (void)in[key];
    m.name = "custom";
    m.source = fmt::format("user-defined at {}", in.where());
  }
  const bool preset_was_mha = m.kv_heads == m.heads;

  if (auto v = in.find("name")) m.name = v->as_string();
  if (auto v = in.find("source")) m.source = v->as_string();
  if (auto v = in.find("layers")) m.layers = read_int(*v, 1);
  if (auto v = in.find("hidden")) m.hidden = read_int(*v, 1);
  if (auto v = in.find("heads")) m.heads = read_int(*v, 1);
  if (auto v = in.find("kv_heads")) m.kv_heads = read_int(*v, 1);
  if (auto v = in.find("head_dim")) m.head_dim = read_int(*v, 1);
  if (auto v = in.find("qk_norm")) m.qk_norm = v->as_bool();
  if (auto v = in.find("sliding_window")) m.sliding_window = read_int(*v, 0);
  if (auto v = in.find("full_attention_every")) m.full_attention_every = read_int(*v, 0);
  if (auto v = in.find("attention_chunk")) m.attention_chunk = read_int(*v, 0);
  if (auto v = in.find("post_norms")) m.post_norms = v->as_bool();
  if (auto v = in.find("logit_softcap")) m.logit_softcap = v->as_bool();
  if (auto v = in.find("ffn")) m.ffn = v->as_int_at_least(1);
  if (auto v = in.find("experts")) m.experts = read_int(*v, 0);
  if (auto v = in.find("experts_per_token")) m.experts_per_token = read_int(*v, 0);
  if (auto v = in.find("shared_experts")) m.shared_experts = read_int(*v, 0);
  if (auto v = in.find("shared_expert_gate")) m.shared_expert_gate = v->as_bool();
  if (auto v = in.find("kv_lora_rank")) m.kv_lora_rank = read_int(*v, 0);
  if (auto v = in.find("q_lora_rank")) m.q_lora_rank = read_int(*v, 0);
  if (auto v = in.find("rope_head_dim")) m.rope_head_dim = read_int(*v, 0);
  if (auto v = in.find("v_head_dim")) m.v_head_dim = read_int(*v, 0);
  if (auto v = in.find("dense_layers")) m.dense_layers = read_int(*v, 0);
  if (auto v = in.find("moe_every")) m.moe_every = read_int(*v, 1);
  if (auto v = in.find("dense_ffn")) m.dense_ffn = v->as_int_at_least(1);
  if (auto v = in.find("expert_bias")) m.expert_bias = v->as_bool();
  if (auto v = in.find("swiglu_limit")) m.swiglu_limit = v->as_double();
  if (auto v = in.find("attention_sinks")) m.attention_sinks = v->as_bool();
  if (auto v = in.find("gated_mlp")) m.gated_mlp = v->as_bool();
  if (auto v = in.find("vocab")) m.vocab = v->as_int_at_least(1);
  if (auto v = in.find("tied_embeddings")) m.tied_embeddings = v->as_bool();
  if (auto v = in.find("seq_len")) m.seq_len = read_int(*v, 1);
  if (auto v = in.find("learned_positions")) m.learned_positions = read_int(*v, 0);
  if (auto v = in.find("norm")) m.norm = v->as_choice({"layernorm", "rmsnorm"}) == "rmsnorm" ? Norm::RMSNorm : Norm::LayerNorm;
  if (auto v = in.find("bias")) {
    // `qkv`: Qwen2's biases on the q, k and v projections only.
    const auto b = v->as_string();
    m.qkv_bias = b == "qkv";
    if (!m.qkv_bias && b != "true" && b != "false" && b != "yes" && b != "no" && b != "on" && b != "off")
      v->fail(fmt::format("expected true, false or qkv (biases on q, k and v only, as Qwen2's), got '{}'", b));
    m.bias = !m.qkv_bias && v->as_bool();
  }

  // Without GQA, "number of KV heads" is not a separate choice: it follows
  // `heads` (so {preset: gpt2-124m, heads: 16} stays multi-head attention).
  if (!in.has("kv_heads") && preset_was_mha) m.kv_heads = m.heads;
  if (!in.has("ffn") && !preset_key) {
    // GPT's 4x is the only size that is a convention; SwiGLU sizes are picked per model.
    if (m.gated_mlp) in.fail("missing required key 'ffn' (a gated MLP has no conventional size; Llama-2 7B uses 11008)");
    m.ffn = 4LL * m.hidden;
  }
  if (preset_key && !in.has("source")) {
    for (const auto& key : in.keys())
      if (key != "preset" && key != "hf_config" && key != "name") {
        m.source += fmt::format("; changed at {}", in.where());
        break;
      }
  }

  check(m, [&](std::initializer_list<std::string_view> keys, const std::string& what) {
    for (auto key : keys)
      if (auto v = in.find(key)) v->fail(what);
    // Every field involved came from the preset: blame the preset itself.
    const Input& at = preset_key ? *preset_key : in;
    at.fail(fmt::format("{}: {}", *keys.begin(), what));
  });
  return m;
}

void validate(const TransformerConfig& m, const std::string& what) {
  check(m, [&](std::initializer_list<std::string_view> keys, const std::string& msg) {
    throw InputError(fmt::format("{}: {}: {}", what, *keys.begin(), msg));
  });
}

std::int64_t parameter_count(const TransformerConfig& m) {
  using namespace detail;
  const std::int64_t per_layer = attention_params(m) + block_norms(m) * norm_params(m) + qk_norm_params(m);
  const std::int64_t moe = moe_layers(m);  // a mixture of experts' dense blocks have a dense MLP's
  const std::int64_t mlp = moe * mlp_params(m) + (m.layers - moe) * mlp_params(dense_view(m));
  return token_embedding_params(m) + position_embedding_params(m) + m.layers * per_layer + mlp + norm_params(m) +
         lm_head_params(m);
}

int moe_block_count(const TransformerConfig& m) { return detail::moe_layers(m); }

std::int64_t active_parameter_count(const TransformerConfig& m) {
  return parameter_count(m) - detail::moe_layers(m) * (detail::mlp_params(m) - detail::active_mlp_params(m));
}

double model_flops_per_token(const TransformerConfig& m, int seq_len) {
  // N counts every weight that takes part in a matmul: the blocks, the final
  // norm and the output projection (for tied models the shared wte, counted
  // once, as nanoGPT's estimate_mfu does). The token and position embedding
  // lookups are left out. The attention term is PaLM's 12*L*h*s (QK^T and AV, h the q width,
  // forward + backward, with no discount for the causal mask), so MFU figures
  // compare with the published ones even though fsdp_units() halves it.
  // A mixture of experts counts the weights a token uses: the router and its experts_per_token experts.
  const double n = static_cast<double>(active_parameter_count(m) - detail::position_embedding_params(m) -
                                       (m.tied_embeddings ? 0 : detail::token_embedding_params(m)));
  // (12 L q s when V's heads are as wide as q's; MLA's are narrower: 6 L (q + v) s.)
  return 6.0 * n + 6.0 * m.layers * static_cast<double>(detail::q_dim(m) + detail::attn_out_dim(m)) * seq_len;
}

const char* to_string(UnitKind k) {
  switch (k) {
    case UnitKind::Root: return "root";
    case UnitKind::Embedding: return "embedding";
    case UnitKind::PositionEmbedding: return "position_embedding";
    case UnitKind::AttentionQKV: return "attention_qkv";
    case UnitKind::AttentionOut: return "attention_out";
    case UnitKind::MlpUp: return "mlp_up";
    case UnitKind::MlpDown: return "mlp_down";
    case UnitKind::LmHead: return "lm_head";
    case UnitKind::Block: return "block";
  }
  return "?";
}

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::Flash2: return "flash2";
    case AttentionKernel::Flash3: return "flash3";
    case AttentionKernel::FlashTriton: return "flash-triton";
    case AttentionKernel::Cudnn: return "cudnn";
    case AttentionKernel::Math: return "math";
    case AttentionKernel::Flex: return "flex";
  }
  return "?";
}

std::vector<std::string> attention_kernel_names() { return {"flash2", "flash3", "flash-triton", "cudnn", "math", "flex"}; }

}  // namespace tagcsim::models
