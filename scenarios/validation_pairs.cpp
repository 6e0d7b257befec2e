// What-if pairs: the question users ask tagcsim is relative ("does float8, async TP, 16 more nodes,
// make my step faster, and by how much?"), so `tagcsim validate` also scores the published rows as
// such questions. Two counted rows of one source whose resolved scenarios differ in exactly one
// setting are a pair; the source measured a speedup between them and the model predicts one.
// A setting with more than two values in a run of otherwise equal rows (8, 16, 32 ... GPUs) gives
// its neighbours as pairs, not every combination, so no run counts more than its steps.
#include "scenarios/validation.hpp"

#include "common/quantiles.hpp"
#include "scenarios/resolved.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace tagcsim::scenarios {
namespace {

using Settings = std::map<std::string, std::string>;

// The resolved YAML as dotted keys ("training.async_tp" -> "true"), without the lines that name
// or describe a row rather than set it up (name, description, every `source:` citation).
Settings settings_of(const ValidationRow& row) {
  Settings out;
  std::istringstream in(resolved_yaml(parse_scenario(row.scenario, row.scenario_file)));
  std::vector<std::string> path;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    const std::size_t depth = first / 2;
    const auto colon = line.find(':', first);
    if (colon == std::string::npos || line[first] == '-') continue;
    const std::string key = line.substr(first, colon - first);
    std::string value = line.substr(colon + 1);
    // The writers end a line with "   # comment"; values that hold " #" are quoted citations,
    // which are skipped below.
    if (const auto c = value.find(" # "); c != std::string::npos) value.erase(c);
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of(' ') + 1);
    path.resize(depth);
    if (value.empty()) {  // a map follows
      path.push_back(key);
      continue;
    }
    if (key == "source" || (depth == 0 && (key == "name" || key == "description"))) continue;
    std::string dotted;
    for (const auto& p : path) dotted += p + ".";
    out[dotted + key] = value;
  }
  return out;
}

// The setting two rows differ in, or "" when they differ in none or in more than one; `keys` gets
// the keys that differ. A setting and its own sub-options count as one ("training.float8" with
// "training.float8_all_gather": a sibling key that extends its name), named by the setting.
// Longer sequences at the same tokens a micro-batch (LLM Foundry's tables halve the micro-batch as
// they double the sequence) are one question too, named kSeqLenSameTokens; the model's own
// sequence length and learned positions follow the sequence.

bool same_tokens(const Settings& a, const Settings& b, const std::vector<std::string>& keys) {
  static const std::vector<std::string> allowed = {"model.seq_len", "model.learned_positions", "training.seq_len",
                                                   "training.micro_batch"};
  for (const auto& k : keys)
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) return false;
  if (std::find(keys.begin(), keys.end(), "training.seq_len") == keys.end()) return false;
  auto tokens = [](const Settings& s) {
    const auto mb = s.find("training.micro_batch"), seq = s.find("training.seq_len");
    return mb == s.end() || seq == s.end() ? -1.0 : std::strtod(mb->second.c_str(), nullptr) *
                                                        std::strtod(seq->second.c_str(), nullptr);
  };
  return tokens(a) > 0 && tokens(a) == tokens(b);
}

std::string single_difference(const Settings& a, const Settings& b, std::vector<std::string>& keys) {
  keys.clear();
  for (const auto& [k, v] : a)
    if (const auto it = b.find(k); it == b.end() || it->second != v) keys.push_back(k);
  for (const auto& [k, v] : b)
    if (!a.count(k)) keys.push_back(k);
  if (same_tokens(a, b, keys)) return kSeqLenSameTokens;
  if (keys.size() == 1) return keys[0];
  if (keys.size() != 2) return "";
  const auto& shorter = keys[0].size() <= keys[1].size() ? keys[0] : keys[1];
  const auto& longer = &shorter == &keys[0] ? keys[1] : keys[0];
  return longer.compare(0, shorter.size() + 1, shorter + "_") == 0 ? shorter : "";
}

// Values as a user sorts them: numbers by size ("16" before "128"), the rest as text.
bool value_less(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  if (ea != a.c_str() && eb != b.c_str() && x != y) return x < y;
  return a < b;
}

// A row pairs when it is counted and has a scenario to compare (a report built by hand may not).
bool pairable(const ValidationRow& row) { return row.counted && !row.scenario.empty(); }

std::vector<Settings> settings_of(const ValidationRun& run) {
  std::vector<Settings> settings(run.rows.size());
  for (std::size_t i = 0; i < run.rows.size(); ++i)
    if (pairable(run.rows[i])) settings[i] = settings_of(run.rows[i]);
  return settings;
}

std::vector<WhatIfPair> what_if_pairs(const ValidationRun& run, const std::vector<Settings>& settings) {
  auto pairable = [&](std::size_t i) { return scenarios::pairable(run.rows[i]); };
  // Rows that differ in one key, grouped by source, key and everything else they share.
  std::map<std::tuple<std::string, std::string, Settings>, std::vector<std::size_t>> runs;
  for (std::size_t a = 0; a < run.rows.size(); ++a)
    for (std::size_t b = a + 1; b < run.rows.size(); ++b) {
      const auto &ra = run.rows[a], &rb = run.rows[b];
      if (!pairable(a) || !pairable(b) || ra.source != rb.source) continue;
      std::vector<std::string> differing;
      const auto key = single_difference(settings[a], settings[b], differing);
      if (key.empty()) continue;
      Settings rest = settings[a];
      for (const auto& k : differing) rest.erase(k);
      auto& members = runs[{ra.source, key, rest}];
      for (std::size_t i : {a, b})
        if (std::find(members.begin(), members.end(), i) == members.end()) members.push_back(i);
    }
  std::vector<WhatIfPair> out;
  for (auto& [group, members] : runs) {
    const auto& key = std::get<1>(group);
    auto value = [&](std::size_t i) {
      const auto it = settings[i].find(key == kSeqLenSameTokens ? "training.seq_len" : key);
      return it == settings[i].end() ? std::string("(absent)") : it->second;
    };
    std::sort(members.begin(), members.end(),
              [&](std::size_t x, std::size_t y) { return value_less(value(x), value(y)); });
    for (std::size_t k = 0; k + 1 < members.size(); ++k) {
      const std::size_t a = members[k], b = members[k + 1];
      const auto &ra = run.rows[a], &rb = run.rows[b];
      const auto &pa = run.results[a], &pb = run.results[b];
      const bool held = pa.has_held_out && pb.has_held_out;
      WhatIfPair p;
      p.source = ra.source;
      p.setting = key;
      p.from = value(a), p.to = value(b);
      p.from_id = ra.id, p.to_id = rb.id;
      p.measured = rb.measured_tps / ra.measured_tps;
      p.predicted = held ? pb.held_out.tps / pa.held_out.tps : pb.shipped.tps / pa.shipped.tps;
      out.push_back(std::move(p));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const WhatIfPair& x, const WhatIfPair& y) {
    return std::tie(x.setting, x.source) < std::tie(y.setting, y.source);
  });
  return out;
}

std::vector<ReplicateRows> replicate_rows(const ValidationRun& run, const std::vector<Settings>& settings) {
  std::vector<ReplicateRows> out;
  for (std::size_t a = 0; a < run.rows.size(); ++a)
    for (std::size_t b = a + 1; b < run.rows.size(); ++b) {
      const auto &ra = run.rows[a], &rb = run.rows[b];
      if (!pairable(ra) || !pairable(rb) || ra.source == rb.source || settings[a] != settings[b]) continue;
      const auto &pa = run.results[a], &pb = run.results[b];
      const bool held = pa.has_held_out && pb.has_held_out;
      out.push_back({ra.id, rb.id, ra.source, rb.source, ra.measured_tps, rb.measured_tps,
                     held ? pa.held_out.tps : pa.shipped.tps, held ? pb.held_out.tps : pb.shipped.tps});
    }
  return out;
}

}  // namespace

void compare_rows(ValidationRun& run) {
  // Each row's scenario resolved once for both: it is most of their cost.
  const auto settings = settings_of(run);
  run.pairs = what_if_pairs(run, settings);
  run.replicates = replicate_rows(run, settings);
}

std::string format_replicate_rows(const std::vector<ReplicateRows>& replicates) {
  if (replicates.empty()) return "";
  std::string out =
      "\nOne run published twice: two counted rows of two sources with the same resolved scenario, their measured "
      "tokens/s/GPU, how far apart (slower / faster - 1), the least error one prediction can have on both "
      "((hi - lo) / (hi + lo)), and the model's errors (held out where the run left sources out):\n\n"
      "| rows | sources | measured | spread | floor | model |\n|---|---|---|---|---|---|\n";
  std::vector<double> spreads, floors;
  for (const auto& r : replicates) {
    out += fmt::format("| {} / {} | {} / {} | {:.0f} / {:.0f} | {:.1f}% | {:.1f}% | {:+.1f}% / {:+.1f}% |\n", r.id_a,
                       r.id_b, r.source_a, r.source_b, r.measured_a, r.measured_b, 100 * r.spread(), 100 * r.floor(),
                       100 * (r.predicted_a / r.measured_a - 1), 100 * (r.predicted_b / r.measured_b - 1));
    spreads.push_back(r.spread());
    floors.push_back(r.floor());
  }
  out += fmt::format("\n{} run{} published twice: the two differ by {:.1f}% in the median, {:.1f}% at most; no one "
                     "prediction comes closer than {:.1f}% to both in the median, {:.1f}% at most.\n",
                     replicates.size(), replicates.size() == 1 ? "" : "s", 100 * median(spreads),
                     100 * *std::max_element(spreads.begin(), spreads.end()), 100 * median(floors),
                     100 * *std::max_element(floors.begin(), floors.end()));
  return out;
}

namespace {

// One setting's pairs, summarised: how many, from how many sources, and their errors.
struct SettingErrors {
  std::size_t pairs = 0, sources = 0;
  double median_abs = 0, max_abs = 0, mean_signed = 0;
};

std::map<std::string, SettingErrors> by_setting(const std::vector<WhatIfPair>& pairs) {
  std::map<std::string, std::vector<const WhatIfPair*>> lists;
  for (const auto& p : pairs) lists[p.setting].push_back(&p);
  std::map<std::string, SettingErrors> out;
  for (const auto& [setting, list] : lists) {
    std::vector<double> abs_errors;
    std::vector<std::string> sources;
    double signed_sum = 0;
    for (const auto* p : list) {
      abs_errors.push_back(std::abs(p->error()));
      signed_sum += p->error();
      if (std::find(sources.begin(), sources.end(), p->source) == sources.end()) sources.push_back(p->source);
    }
    out[setting] = {list.size(), sources.size(), median(abs_errors),
                    *std::max_element(abs_errors.begin(), abs_errors.end()), signed_sum / double(list.size())};
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> what_if_summaries(const std::vector<WhatIfPair>& pairs) {
  std::map<std::string, std::string> out;
  for (const auto& [setting, e] : by_setting(pairs))
    out[setting] = fmt::format(
        "{} published pair{} of {} source{} that changed only it: the predicted speedup {:.1f}% off in the "
        "median, {:+.1f}% mean signed, {:.1f}% at worst",
        e.pairs, e.pairs == 1 ? "" : "s", e.sources, e.sources == 1 ? "" : "s", 100 * e.median_abs,
        100 * e.mean_signed, 100 * e.max_abs);
  return out;
}

std::string format_what_if_pairs(const std::vector<WhatIfPair>& pairs) {
  if (pairs.empty()) return "";
  std::string out =
      "\nWhat-if pairs: two rows of one source that differ in one setting, the speedup in tokens/s/GPU "
      "from the first to the second, measured against predicted (held out where the run left sources out):\n\n"
      "| setting | source | from | to | measured | predicted | error | rows |\n|---|---|---|---|---|---|---|---|\n";
  std::vector<double> all;
  for (const auto& p : pairs) {
    out += fmt::format("| {} | {} | {} | {} | {:.3f} | {:.3f} | {:+.1f}% | {} -> {} |\n", p.setting, p.source, p.from,
                       p.to, p.measured, p.predicted, 100 * p.error(), p.from_id, p.to_id);
    all.push_back(std::abs(p.error()));
  }
  out += "\n| setting | pairs | sources | median abs error | max abs error | mean signed |\n|---|---|---|---|---|---|\n";
  for (const auto& [setting, e] : by_setting(pairs))
    out += fmt::format("| {} | {} | {} | {:.1f}% | {:.1f}% | {:+.1f}% |\n", setting, e.pairs, e.sources,
                       100 * e.median_abs, 100 * e.max_abs, 100 * e.mean_signed);
  out += fmt::format("| all | {} | | {:.1f}% | {:.1f}% | |\n", pairs.size(), 100 * median(all),
                     100 * *std::max_element(all.begin(), all.end()));
  return out;
}

}  // namespace tagcsim::scenarios
