// A tuner plugin's rules in the CSV of NCCL's example tuner plugin (plugins/tuner/example/README.md
// in NVIDIA/nccl): what a cluster whose NCCL loads such a plugin runs instead of NCCL's own choice.
//
//   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
//
// The plugin reads the same file; so that a rule tagcsim cannot follow never passes silently, every
// field is checked here and a bad one stops with its file and line.

#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>

namespace tagcsim::topologies {
namespace {

std::string trimmed(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(trimmed(f));
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// A whole integer, or nothing.
std::optional<long long> integer(const std::string& text) {
  long long v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<NcclTunerRule> read_nccl_tuner_config(const std::string& path) {
  const std::string text = read_text_file(path);
  std::vector<NcclTunerRule> rules;
  std::stringstream lines(text);
  int number = 0;
  for (std::string raw; std::getline(lines, raw);) {
    ++number;
    const std::string line = trimmed(raw);
    if (line.empty() || line[0] == '#') continue;
    auto fail = [&](const std::string& problem) { throw InputError(path, number, "", problem); };
    const auto f = fields(line);
    if (f.size() < 8 || f.size() > 10)
      fail(fmt::format("expected 8 to 10 comma-separated fields (collective_type,min_bytes,max_bytes,algorithm,"
                       "protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]), got {}",
                       f.size()));
    // A size (0 and up), or a count that -1 leaves to NCCL or to any communicator (1 and up).
    auto bytes_at = [&](std::size_t i, const char* name) {
      const auto v = integer(f[i]);
      if (!v || *v < 0) fail(fmt::format("{}: expected a whole number of at least 0, got '{}'", name, f[i]));
      return *v;
    };
    auto count_at = [&](std::size_t i, const char* name) {
      const auto v = integer(f[i]);
      if (!v || (*v < 1 && *v != -1))
        fail(fmt::format("{}: expected -1 (any) or a positive whole number, got '{}'", name, f[i]));
      return *v;
    };
    NcclTunerRule r;
    r.line = number;
    static const std::vector<std::string> kOps = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"};
    r.op = f[0];
    if (std::find(kOps.begin(), kOps.end(), r.op) == kOps.end()) fail(unknown_name("collective_type", f[0], kOps));
    r.min_bytes = double(bytes_at(1, "min_bytes"));
    r.max_bytes = double(bytes_at(2, "max_bytes"));
    if (r.min_bytes > r.max_bytes) fail(fmt::format("min_bytes {} is above max_bytes {}", f[1], f[2]));
    if (f[3] == "collnet_direct" || f[3] == "collnet_chain")
      fail(fmt::format("algorithm: {} needs a SHARP-capable fabric, which tagcsim does not model", f[3]));
    r.algo = parse_nccl_algo(f[3]);
    if (!r.algo) fail(unknown_name("algorithm", f[3], nccl_words(~0u, kNcclAlgoWords)));
    r.proto = parse_nccl_proto(f[4]);
    if (!r.proto) fail(unknown_name("protocol", f[4], nccl_words(~0u, kNcclProtoWords)));
    r.channels = int(count_at(5, "channels"));
    if (r.channels > 64) fail(fmt::format("channels: expected -1 (NCCL's own) or 1 to 64, got {}", f[5]));
    r.nodes = int(count_at(6, "nNodes"));
    r.ranks = int(count_at(7, "nRanks"));
    // tagcsim issues each collective on its own (numPipeOps 1) from buffers PyTorch does not register.
    if (f.size() > 8 && count_at(8, "numPipeOps") > 1) r.never = true;
    if (f.size() > 9) {
      const auto reg = integer(f[9]);
      if (!reg || *reg < -1 || *reg > 1) fail(fmt::format("regBuff: expected -1, 0 or 1, got '{}'", f[9]));
      if (*reg == 1) r.never = true;
    }
    rules.push_back(r);
  }
  return rules;
}

}  // namespace tagcsim::topologies
