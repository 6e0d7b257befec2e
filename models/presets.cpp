// Published model shapes. Each source string says where the numbers come from
// and which parameter count they reproduce, so a user can check a preset
// against the model card without reading this file.
#include "models/model.hpp"
#include "models/preset_makers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <utility>

namespace tagcsim::models {
namespace detail {

TransformerConfig llama(std::string name, int layers, int hidden, int heads, int kv_heads, std::int64_t ffn,
                        std::int64_t vocab, int seq_len, std::string source) {
  TransformerConfig m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.gated_mlp = true;
  m.vocab = vocab;
  m.tied_embeddings = false;
  m.seq_len = seq_len;
  m.learned_positions = 0;  // RoPE
  m.norm = Norm::RMSNorm;
  m.bias = false;
  m.source = std::move(source);
  return m;
}

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return s;
}

}  // namespace detail

namespace {

using detail::llama;
using detail::lowercase;
using detail::moe_presets;
using detail::PresetTable;

TransformerConfig gpt2(std::string name, int layers, int hidden, int heads, std::string source) {
  TransformerConfig m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn = 4LL * hidden;
  m.vocab = 50257;
  m.tied_embeddings = true;
  m.seq_len = 1024;
  m.learned_positions = 1024;
  m.norm = Norm::LayerNorm;
  m.bias = true;
  m.source = std::move(source);
  return m;
}

// Qwen3's dense models: Llama's layout with 128-wide heads whatever the hidden size, RMSNorm on
// each head of q and k, and Qwen's 151,936-token vocabulary. Shapes as torchtitan's qwen3_configs
// (torchtitan/models/qwen3/__init__.py @cfb9326), whose training sequence (RoPE max_seq_len) is 4096.
TransformerConfig qwen3(const std::string& flavor, int layers, int hidden, int heads, std::int64_t ffn,
                        bool tied_embeddings, const std::string& parameters) {
  const std::string size = lowercase(flavor);
  TransformerConfig m = llama("qwen3-" + size, layers, hidden, heads, 8, ffn, 151936, 4096,
                              fmt::format("Qwen Team 2025 (Qwen3 technical report); pytorch/torchtitan "
                                          "torchtitan/models/qwen3/__init__.py @cfb9326 qwen3_configs['{}'] (dim {}, "
                                          "{} layers, {} heads of 128, 8 KV heads, FFN {}, vocab 151936{}, qk_norm; "
                                          "RoPE max_seq_len 4096): {} parameters",
                                          flavor, hidden, layers, heads, ffn, tied_embeddings ? ", tied" : "",
                                          parameters));
  m.head_dim = 128;
  m.qk_norm = true;
  m.tied_embeddings = tied_embeddings;
  return m;
}

// OLMo 2: Llama's layout with its norms after the attention and the MLP instead of before (as many,
// so timed alike), RMSNorm over the whole q and k projections, and the dolma2 tokenizer's 100,278
// tokens padded to 100,352; no biases, untied. Shapes from OLMo-core's olmo2_7B / olmo2_13B /
// olmo2_32B (src/olmo_core/nn/transformer/config.py @fa6c501) and the OLMo 2 report (arXiv
// 2501.00656); pretrained at 4096 tokens. tagcsim's QK norms are per head (Qwen3's): the whole-width
// norms normalize the same bytes and hold (h + kv x d) - 2d more weights a layer, 0.003% of the model.
TransformerConfig olmo2(const std::string& flavor, int layers, int hidden, int heads, int kv_heads, std::int64_t ffn,
                        const std::string& parameters) {
  TransformerConfig m = llama("olmo2-" + lowercase(flavor), layers, hidden, heads, kv_heads, ffn, 100352, 4096,
                              fmt::format("OLMo Team 2024 (2 OLMo 2 Furious, arXiv 2501.00656); allenai/OLMo-core "
                                          "olmo2_{} @fa6c501 (d_model {}, {} layers, {}/{} heads, FFN {}, vocab "
                                          "100352, QK norm, reordered norms): {} parameters (OLMo-core's count, "
                                          "whole-width QK norms)",
                                          flavor, hidden, layers, heads, kv_heads, ffn, parameters));
  m.qk_norm = true;
  return m;
}

// Qwen2.5's dense models: Llama's layout with biases on q, k and v (and no other), hidden / heads
// wide heads, and a 151,936-token vocabulary (152,064 from 7B up) whose embedding the three small
// models tie to the output projection. Layers, heads and tying from the Qwen2.5 technical report
// (arXiv 2412.15115, Table 1); hidden, FFN and vocabulary from each Qwen/Qwen2.5-<size> config.json.
// Sequence 4096, the report's pretraining context before its long-context stage.
TransformerConfig qwen25(const std::string& flavor, int layers, int hidden, int heads, int kv_heads,
                         std::int64_t ffn, std::int64_t vocab, bool tied_embeddings, const std::string& parameters) {
  const std::string size = lowercase(flavor);
  TransformerConfig m = llama("qwen2.5-" + size, layers, hidden, heads, kv_heads, ffn, vocab, 4096,
                              fmt::format("Qwen Team 2024 (Qwen2.5 technical report, arXiv 2412.15115, Table 1); "
                                          "Qwen/Qwen2.5-{} config.json (hidden {}, {} layers, {}/{} heads, "
                                          "intermediate {}, vocab {}{}, q/k/v biases): {} parameters",
                                          flavor, hidden, layers, heads, kv_heads, ffn, vocab,
                                          tied_embeddings ? ", tied" : "", parameters));
  m.qkv_bias = true;
  m.tied_embeddings = tied_embeddings;
  return m;
}

// Gemma 2 and 3: Llama's layout with GeGLU (a gated MLP, as SwiGLU), 256-wide heads (27B: 128),
// a norm after the attention and the MLP too, tied embeddings, and local blocks (a sliding window)
// interleaved with global ones. Gemma 2 caps its logits (30 tanh(x / 30)) and its attention scores
// (inside flash-attn's kernel: not timed apart); Gemma 3 drops the caps for q/k norms. Not modelled:
// the embedding's scaling by sqrt(hidden), one element-wise kernel.
TransformerConfig gemma(const std::string& name, int layers, int hidden, int heads, int kv_heads, int head_dim,
                        std::int64_t ffn, std::int64_t vocab, int seq_len, int window, int full_every,
                        std::string source) {
  TransformerConfig m = llama(name, layers, hidden, heads, kv_heads, ffn, vocab, seq_len, std::move(source));
  m.head_dim = head_dim;
  m.tied_embeddings = true;
  m.post_norms = true;
  m.sliding_window = window;
  m.full_attention_every = full_every;
  return m;
}
TransformerConfig gemma2(const std::string& size, int layers, int hidden, int heads, int kv_heads, int head_dim,
                         std::int64_t ffn, const std::string& parameters) {
  auto m = gemma("gemma2-" + size, layers, hidden, heads, kv_heads, head_dim, ffn, 256000, 8192, 4096, 2,
                 fmt::format("Gemma Team 2024 (Gemma 2 report, Table 1: context 8192, local window 4096 every "
                             "other layer, logit soft-capping); google/gemma-2-{} config.json (hidden {}, {} layers, "
                             "{}/{} heads of {}, intermediate {}, vocab 256000, tied): {} parameters",
                             size, hidden, layers, heads, kv_heads, head_dim, ffn, parameters));
  m.logit_softcap = true;
  return m;
}
TransformerConfig gemma3(const std::string& size, int layers, int hidden, int heads, int kv_heads, int head_dim,
                         std::int64_t ffn, int window, const std::string& parameters) {
  auto m = gemma("gemma3-" + size, layers, hidden, heads, kv_heads, head_dim, ffn, 262144, 32768, window, 6,
                 fmt::format("Gemma Team 2025 (Gemma 3 report: 5 local blocks to 1 global, pretrained at 32k "
                             "tokens); google/gemma-3-{} config.json (hidden {}, {} layers, {}/{} heads of {}, "
                             "intermediate {}, sliding_window {}, qk norms, tied); the language model only, vocab "
                             "262144 as keras-hub's gemma3 presets count it: {} parameters",
                             size, hidden, layers, heads, kv_heads, head_dim, ffn, window, parameters));
  m.qk_norm = true;
  return m;
}

// The small Llama 3.2 models share the token embedding with the output projection.
TransformerConfig tied(TransformerConfig m) {
  m.tied_embeddings = true;
  return m;
}

// LLM Foundry's MPT: ALiBi, no biases anywhere (no_bias: true, LayerNorm
// weight only), tied embeddings, expansion ratio 4, GPT-NeoX vocab padded to 50368.
TransformerConfig mpt(std::string name, int layers, int hidden, int heads, std::string source) {
  TransformerConfig m = gpt2(std::move(name), layers, hidden, heads, std::move(source));
  m.vocab = 50368;
  m.seq_len = 2048;
  m.learned_positions = 0;  // ALiBi
  m.bias = false;
  return m;
}

std::string foundry(const char* size, int hidden, int heads, int layers, const char* count) {
  return fmt::format(
      "LLM Foundry scripts/train/yamls/pretrain/mpt-{}.yaml (d_model {}, n_heads {}, n_layers {}, "
      "expansion_ratio 4, vocab_size 50368, max_seq_len 2048) with the released MPT settings "
      "(no_bias, ALiBi, tied embeddings); no exact published count, {} parameters as implied by that config",
      size, hidden, heads, layers, count);
}

const PresetTable& table() {
  static const PresetTable t = [] {
    PresetTable dense = {
      {"gpt2-124m",
       [] {
         return gpt2("gpt2-124m", 12, 768, 12,
                     "Radford et al. 2019 (GPT-2); Hugging Face openai-community/gpt2 config.json "
                     "(n_layer 12, n_embd 768, n_head 12, n_positions 1024, vocab 50257): 124,439,808 parameters");
       }},
      {"gpt2-355m",
       [] {
         return gpt2("gpt2-355m", 24, 1024, 16,
                     "Radford et al. 2019 (GPT-2 medium); openai-community/gpt2-medium config.json "
                     "(n_layer 24, n_embd 1024, n_head 16): 354,823,168 parameters");
       }},
      {"gpt2-774m",
       [] {
         return gpt2("gpt2-774m", 36, 1280, 20,
                     "Radford et al. 2019 (GPT-2 large); openai-community/gpt2-large config.json "
                     "(n_layer 36, n_embd 1280, n_head 20): 774,030,080 parameters");
       }},
      {"gpt2-1.5b",
       [] {
         return gpt2("gpt2-1.5b", 48, 1600, 25,
                     "Radford et al. 2019 (GPT-2 XL); openai-community/gpt2-xl config.json "
                     "(n_layer 48, n_embd 1600, n_head 25): 1,557,611,200 parameters");
       }},
      {"gpt2-124m-untied",
       [] {
         auto m = gpt2("gpt2-124m-untied", 12, 768, 12,
                       "TAGC reference run: nanoGPT (karpathy/nanoGPT model.py) GPT-2 124M shape with "
                       "bias=False, vocab_size 50304, block_size 512 and a separate lm_head: 162,614,016 "
                       "parameters (about 162.6M)");
         m.vocab = 50304;
         m.tied_embeddings = false;
         m.seq_len = 512;
         m.learned_positions = 512;
         m.bias = false;
         return m;
       }},
      {"llama2-7b",
       [] {
         return llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096,
                      "Touvron et al. 2023 (Llama 2); meta-llama/Llama-2-7b-hf config.json: 6,738,415,616 parameters");
       }},
      {"llama2-13b",
       [] {
         return llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096,
                      "Touvron et al. 2023 (Llama 2); meta-llama/Llama-2-13b-hf config.json: 13,015,864,320 parameters");
       }},
      {"llama2-70b",
       [] {
         return llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096,
                      "Touvron et al. 2023 (Llama 2, GQA with 8 KV heads); meta-llama/Llama-2-70b-hf config.json: "
                      "68,976,648,192 parameters");
       }},
      {"codellama-34b",
       [] {
         return llama("codellama-34b", 48, 8192, 64, 8, 22016, 32000, 4096,
                      "Roziere et al. 2023 (Code Llama, the 34B model: Llama 2's layout, GQA with 8 KV heads); "
                      "codellama/CodeLlama-34b-hf config.json (hidden 8192, 48 layers, 64/8 heads, intermediate "
                      "22016, vocab 32000, untied); the sequence 4096, Llama 2's: 33,743,970,304 parameters");
       }},
      {"llama3.1-8b",
       [] {
         return llama("llama3.1-8b", 32, 4096, 32, 8, 14336, 128256, 8192,
                      "Llama Team 2024 (The Llama 3 Herd of Models, Table 3); meta-llama/Llama-3.1-8B config.json: "
                      "8,030,261,248 parameters");
       }},
      {"llama3.1-70b",
       [] {
         return llama("llama3.1-70b", 80, 8192, 64, 8, 28672, 128256, 8192,
                      "Llama Team 2024 (The Llama 3 Herd of Models, Table 3); meta-llama/Llama-3.1-70B config.json: "
                      "70,553,706,496 parameters");
       }},
      {"llama3.2-1b",
       [] {
         return tied(llama("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, 8192,
                           "Meta 2024 (Llama 3.2 model card); meta-llama/Llama-3.2-1B config.json (hidden 2048, 16 "
                           "layers, 32/8 heads, intermediate 8192, vocab 128256, tie_word_embeddings true): "
                           "1,235,814,400 parameters; sequence 8192 as the Llama 3.1 presets"));
       }},
      {"llama3.2-3b",
       [] {
         return tied(llama("llama3.2-3b", 28, 3072, 24, 8, 8192, 128256, 8192,
                           "Meta 2024 (Llama 3.2 model card); meta-llama/Llama-3.2-3B config.json (hidden 3072, 28 "
                           "layers, 24/8 heads, intermediate 8192, vocab 128256, tie_word_embeddings true): "
                           "3,212,749,824 parameters; sequence 8192 as the Llama 3.1 presets"));
       }},
      {"mistral-7b-v0.3",
       [] {
         return llama("mistral-7b-v0.3", 32, 4096, 32, 8, 14336, 32768, 8192,
                      "Jiang et al. 2023 (Mistral 7B, Table 1: context 8192); mistralai/Mistral-7B-v0.3 config.json "
                      "(vocab 32768, sliding_window null: full attention, unlike v0.1's 4096-token window): "
                      "7,248,023,552 parameters");
       }},
      {"mistral-7b-v0.1",
       [] {
         auto m = llama("mistral-7b-v0.1", 32, 4096, 32, 8, 14336, 32000, 8192,
                        "Jiang et al. 2023 (Mistral 7B, Table 1: window 4096, context 8192); "
                        "mistralai/Mistral-7B-v0.1 config.json (vocab 32000, sliding_window 4096): "
                        "7,241,732,096 parameters");
         m.sliding_window = 4096;
         return m;
       }},
      {"llama3.1-405b",
       [] {
         return llama("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192,
                      "Llama Team 2024 (The Llama 3 Herd of Models, Table 3); meta-llama/Llama-3.1-405B config.json: "
                      "405,853,388,800 parameters");
       }},
      {"olmo2-7b", [] { return olmo2("7B", 32, 4096, 32, 32, 11008, "7,298,617,344"); }},
      {"olmo2-13b", [] { return olmo2("13B", 40, 5120, 40, 40, 13824, "13,716,198,400"); }},
      {"olmo2-32b", [] { return olmo2("32B", 64, 5120, 40, 8, 27648, "32,234,279,936"); }},
      {"qwen3-0.6b", [] { return qwen3("0.6B", 28, 1024, 16, 3072, true, "596,049,920"); }},
      {"qwen3-1.7b", [] { return qwen3("1.7B", 28, 2048, 16, 6144, true, "1,720,574,976"); }},
      {"qwen3-4b", [] { return qwen3("4B", 36, 2560, 32, 9728, true, "4,022,468,096"); }},
      {"qwen3-8b", [] { return qwen3("8B", 36, 4096, 32, 12288, false, "8,190,735,360"); }},
      {"qwen3-14b", [] { return qwen3("14B", 40, 5120, 40, 17408, false, "14,768,307,200"); }},
      {"qwen3-32b", [] { return qwen3("32B", 64, 5120, 64, 25600, false, "32,762,123,264"); }},
    };
    // The mixtures of experts (presets_moe.cpp) sit between Qwen3's dense models and Qwen2.5's.
    PresetTable moe = moe_presets();
    dense.insert(dense.end(), moe.begin(), moe.end());
    PresetTable rest = {
      // The model cards round these to 0.49B, 1.54B, 3.09B, 7.61B, 14.7B, 72.7B; 32B's says 32.5B.
      {"qwen2.5-0.5b", [] { return qwen25("0.5B", 24, 896, 14, 2, 4864, 151936, true, "494,032,768"); }},
      {"qwen2.5-1.5b", [] { return qwen25("1.5B", 28, 1536, 12, 2, 8960, 151936, true, "1,543,714,304"); }},
      {"qwen2.5-3b", [] { return qwen25("3B", 36, 2048, 16, 2, 11008, 151936, true, "3,085,938,688"); }},
      {"qwen2.5-7b", [] { return qwen25("7B", 28, 3584, 28, 4, 18944, 152064, false, "7,615,616,512"); }},
      {"qwen2.5-14b", [] { return qwen25("14B", 48, 5120, 40, 8, 13824, 152064, false, "14,770,033,664"); }},
      {"qwen2.5-32b", [] { return qwen25("32B", 64, 5120, 40, 8, 27648, 152064, false, "32,763,876,352"); }},
      {"qwen2.5-72b", [] { return qwen25("72B", 80, 8192, 64, 8, 29568, 152064, false, "72,706,203,648"); }},
      {"gemma2-2b", [] { return gemma2("2b", 26, 2304, 8, 4, 256, 9216, "2,614,341,888"); }},
      {"gemma2-9b", [] { return gemma2("9b", 42, 3584, 16, 8, 256, 14336, "9,241,705,984"); }},
      {"gemma2-27b", [] { return gemma2("27b", 46, 4608, 32, 16, 128, 36864, "27,227,128,320"); }},
      {"gemma3-1b", [] { return gemma3("1b", 26, 1152, 4, 1, 256, 6912, 512, "999,885,952"); }},
      {"gemma3-4b", [] { return gemma3("4b", 34, 2560, 8, 4, 256, 10240, 1024, "3,880,099,328"); }},
      {"gemma3-12b", [] { return gemma3("12b", 48, 3840, 16, 8, 256, 15360, 1024, "11,765,788,416"); }},
      {"gemma3-27b", [] { return gemma3("27b", 62, 5376, 32, 16, 128, 21504, 1024, "27,009,002,240"); }},
      {"mpt-125m", [] { return mpt("mpt-125m", 12, 768, 12, foundry("125m", 768, 12, 12, "123,636,480")); }},
      {"mpt-350m", [] { return mpt("mpt-350m", 24, 1024, 16, foundry("350m", 1024, 16, 24, "353,616,896")); }},
      {"mpt-760m", [] { return mpt("mpt-760m", 24, 1536, 12, foundry("760m", 1536, 12, 24, "756,917,760")); }},
      {"mpt-1b", [] { return mpt("mpt-1b", 24, 2048, 16, foundry("1b", 2048, 16, 24, "1,311,213,568")); }},
      {"mpt-3b", [] { return mpt("mpt-3b", 32, 2560, 20, foundry("3b", 2560, 20, 32, "2,645,690,880")); }},
      {"mpt-7b",
       [] {
         return mpt("mpt-7b", 32, 4096, 32,
                    "MosaicML 2023 (Introducing MPT-7B) and LLM Foundry mpt-7b.yaml (d_model 4096, n_heads 32, "
                    "n_layers 32, vocab 50368): 6,649,024,512 parameters; the released mosaicml/mpt-7b pads the "
                    "vocab to 50432, hence its published 6,649,286,656");
       }},
      {"mpt-13b", [] { return mpt("mpt-13b", 40, 5120, 40, foundry("13b", 5120, 40, 40, "12,841,210,880")); }},
      {"mpt-30b",
       [] {
         return mpt("mpt-30b", 48, 7168, 56,
                    "MosaicML 2023 (MPT-30B, model card: 29.95B parameters) and LLM Foundry mpt-30b.yaml "
                    "(d_model 7168, n_heads 56, n_layers 48, vocab 50368): 29,956,742,144 parameters");
       }},
      {"mpt-70b", [] { return mpt("mpt-70b", 80, 8192, 64, foundry("70b", 8192, 64, 80, "64,838,443,008")); }},
    };
    dense.insert(dense.end(), rest.begin(), rest.end());
    return dense;
  }();
  return t;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& [name, make] : table()) out.push_back(name);
  return out;
}

const Aliases& preset_aliases() {
  // Llama 3 and 3.1 have the same shapes at 8B and 70B (3.1 only lengthens the context).
  static const Aliases aliases = {
      {"llama3-8b", "llama3.1-8b"},     {"llama-3-8b", "llama3.1-8b"},   {"llama-3.1-8b", "llama3.1-8b"},
      {"llama3-70b", "llama3.1-70b"},   {"llama-3-70b", "llama3.1-70b"}, {"llama-3.1-70b", "llama3.1-70b"},
      {"llama-3.1-405b", "llama3.1-405b"}, {"llama-2-7b", "llama2-7b"},  {"llama-2-13b", "llama2-13b"},
      {"llama-2-70b", "llama2-70b"},    {"gpt2", "gpt2-124m"},           {"gpt2-medium", "gpt2-355m"},
      {"gpt2-large", "gpt2-774m"},      {"gpt2-xl", "gpt2-1.5b"},        {"llama-3.2-1b", "llama3.2-1b"},
      {"llama-3.2-3b", "llama3.2-3b"},  {"mistral-7b", "mistral-7b-v0.3"},  {"olmo-2-7b", "olmo2-7b"},
      {"olmo-2-13b", "olmo2-13b"},      {"olmo-2-32b", "olmo2-32b"},     {"llama2-34b", "codellama-34b"},
      {"code-llama-34b", "codellama-34b"},
      // torchtitan's names for DeepSeek's shapes: its flavor "16B" is DeepSeek-V2-Lite's.
      {"deepseek-v3-16b", "deepseek-v2-lite"}, {"deepseek-v3", "deepseek-v3-671b"},
      {"llama4-scout", "llama4-scout-17b-16e"}, {"llama-4-scout", "llama4-scout-17b-16e"},
      {"llama4-maverick", "llama4-maverick-17b-128e"}, {"llama-4-maverick", "llama4-maverick-17b-128e"},
  };
  return aliases;
}

TransformerConfig preset(const std::string& name) {
  const std::string n = resolve_alias(name, preset_aliases());
  for (const auto& [key, make] : table())
    if (key == n) return make();
  throw InputError(unknown_name("model preset", name, preset_names(), preset_aliases()));
}

}  // namespace tagcsim::models
