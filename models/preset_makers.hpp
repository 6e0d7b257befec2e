// Internal to models/: the builders the preset tables share (presets.cpp for the dense models,
// presets_moe.cpp for the mixtures of experts).
#pragma once

#include "models/model.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tagcsim::models::detail {

// Llama's layout: RMSNorm, rotary positions, SwiGLU, no biases, untied embeddings.
TransformerConfig llama(std::string name, int layers, int hidden, int heads, int kv_heads, std::int64_t ffn,
                        std::int64_t vocab, int seq_len, std::string source);

// A preset's name carries its size in lower case ("8B" -> "qwen3-8b").
std::string lowercase(std::string s);

using PresetTable = std::vector<std::pair<std::string, std::function<TransformerConfig()>>>;

// The mixtures of experts, in the order `tagcsim show` lists them.
PresetTable moe_presets();

}  // namespace tagcsim::models::detail
