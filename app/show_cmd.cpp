// tagcsim show [models|clusters|gpus] [NAME]: the presets, and every value of one with its unit
// and source, as YAML that a scenario can take as is.
#include "app/commands.hpp"
#include "models/model.hpp"
#include "scenarios/resolved.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"
#include "topologies/cluster_yaml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <regex>

namespace tagcsim::app {
namespace {

enum class Kind { Models, Clusters, Gpus };

std::optional<Kind> parse_kind(const std::string& s) {
  if (s == "models" || s == "model") return Kind::Models;
  if (s == "clusters" || s == "cluster") return Kind::Clusters;
  if (s == "gpus" || s == "gpu" || s == "devices" || s == "device") return Kind::Gpus;
  return std::nullopt;
}

std::vector<std::string> names_of(Kind k) {
  return k == Kind::Models ? models::preset_names() : k == Kind::Clusters ? topologies::preset_names()
                                                                          : topologies::device_names();
}
const Aliases& aliases_of(Kind k) {
  return k == Kind::Models ? models::preset_aliases() : k == Kind::Clusters ? topologies::preset_aliases()
                                                                            : topologies::device_aliases();
}

std::string aliases_for(Kind k, const std::string& name) {
  std::string out;
  for (const auto& [alias, target] : aliases_of(k))
    if (target == name) out += (out.empty() ? "" : ", ") + alias;
  return out;
}

std::string gbits(double bytes_per_s) { return fmt::format("{:g} Gb/s", bytes_per_s * 8 / 1e9); }

// How a preset's predictions did against published measurements they were not fitted to, in a
// few characters: the list is where a user compares presets, and the numbers say which to trust.
// "median X%, p90 Y%" from a held-out sentence (the first after `after`), as "X/Y%"; "" if none.
std::string median_p90(const std::string& sentence, const std::string& after) {
  static const std::regex re(R"(median ([0-9.]+)%, p90 ([0-9.]+)%)");
  const auto at = sentence.find(after);
  std::smatch m;
  if (at == std::string::npos || !std::regex_search(sentence.begin() + long(at), sentence.end(), m, re)) return "";
  return fmt::format("{}/{}%", m[1].str(), m[2].str());
}

// A cluster's collectives across its nodes: the held-out line of tables connected like it.
std::string collectives_checked(const topologies::Cluster& c) {
  const std::string key = topologies::connection_key(c);
  const std::string mp = median_p90(topologies::collective_held_out(key), ">= 1 MiB");
  if (mp.empty()) return "-";
  const int largest = topologies::collective_held_out_largest_nodes(key);
  return key + " " + mp + (largest > 0 ? fmt::format(" <={}", largest) : "");
}

// A GPU's compute: its own fit (rows, sources, held-out median/p90), a part's it borrows, or none;
// in full (one preset shown) or as the list's column.
std::string compute_checked(const topologies::DeviceProfile& d, bool in_full = false) {
  const sim::KernelProfile* p = d.profile.empty() ? nullptr : sim::device_kernel_profile(d);
  if (!p) return in_full ? "none: the datasheet roofline (no kernel profile)" : "roofline";
  if (const std::string as = sim::fitted_as(*p); as != p->fit_device())
    return in_full ? "none of its own: " + as + "'s fit (" +
                         (sim::has_device_fit(as) ? "its kernel profile's GPU" : "its family's") + ")"
                   : "as " + as;
  const std::string& held = p->fitted.held_out;
  if (in_full) return held;
  static const std::regex rows(R"(([0-9]+) rows? of ([0-9]+) sources?)");
  std::smatch m;
  const std::string count =
      std::regex_search(held, m, rows)
          ? fmt::format("{} row{}, {} src, ", m[1].str(), m[1].str() == "1" ? "" : "s", m[2].str())
          : "";
  return count + median_p90(held, "held out");
}

// The name column as wide as the longest name, so the columns after it line up.
std::size_t name_width(const std::vector<std::string>& names, std::size_t at_least) {
  std::size_t w = at_least;
  for (const auto& n : names) w = std::max(w, n.size());
  return w;
}

std::string list(Kind k) {
  std::string out;
  if (k == Kind::Models) {
    out += "model presets (tagcsim show models NAME: every value and its source)\n";
    const std::size_t w = name_width(models::preset_names(), 18);
    out += fmt::format("  {:<{}} {:>8} {:>6} {:>6} {:>5} {:>8} {:>13} {:>7} {:>6}  {}\n", "name", w, "params", "layers",
                       "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "aliases");
    for (const auto& n : models::preset_names()) {
      const auto m = models::preset(n);
      // A mixture of experts: its experts x their width, and the experts a token runs.
      const std::string ffn =
          m.experts > 0 ? fmt::format("{}x{} top{}", m.experts, m.ffn, m.experts_per_token) : fmt::format("{}", m.ffn);
      out += fmt::format("  {:<{}} {:>7.2f}B {:>6} {:>6} {:>5} {:>8} {:>13} {:>7} {:>6}  {}\n", n, w,
                         double(models::parameter_count(m)) / 1e9, m.layers, m.hidden, m.heads, m.kv_heads, ffn,
                         m.vocab, m.seq_len, aliases_for(k, n));
    }
  } else if (k == Kind::Clusters) {
    out += "cluster presets (tagcsim show clusters NAME: every value and its source; set nodes in a scenario)\n";
    const std::size_t w = name_width(topologies::preset_names(), 15);
    out += fmt::format("  {:<{}} {:>5} {:>9}  {:<16} {:<14} {:<27} {:<25} {}\n", "name", w, "nodes", "GPUs/node",
                       "GPU", "NVLink per GPU", "NICs per node", "held out (1)", "aliases");
    for (const auto& n : topologies::preset_names()) {
      const auto c = topologies::preset(n);
      out += fmt::format("  {:<{}} {:>5} {:>9}  {:<16} {:<14} {:<27} {:<25} {}\n", n, w, c.nodes, c.gpus_per_node,
                         c.gpu.name, fmt::format("{:g} GB/s", c.intra.bandwidth / 1e9),
                         fmt::format("{} x {} = {}", c.nics.count, gbits(c.nics.bandwidth),
                                     gbits(c.nics.count * c.nics.bandwidth)),
                         collectives_checked(c), aliases_for(k, n));
    }
    out += "  (1) collectives across its nodes, >= 1 MiB: median / p90 |error| on published nccl-tests tables "
           "connected alike, each source held out of the fit (docs/calibration.md); <=N: the most nodes (NVL72: racks) "
           "one of them spans, past which a ring's latency is extrapolated; - : no such table\n";
  } else {
    out += "GPU presets (tagcsim show gpus NAME: every value and its source)\n";
    const std::size_t w = name_width(topologies::device_names(), 10);
    out += fmt::format("  {:<{}} {:<16} {:>13} {:>9} {:>10} {:>9}  {:<29} {}\n", "name", w, "GPU", "bf16 TFLOP/s",
                       "memory", "HBM", "GEMM eff.", "training fit (2)", "aliases");
    for (const auto& n : topologies::device_names()) {
      const auto d = topologies::device(n);
      out += fmt::format("  {:<{}} {:<16} {:>13g} {:>5.1f} GiB {:>5g} TB/s {:>9g}  {:<29} {}\n", n, w, d.name,
                         d.peak_flops_bf16 / 1e12, d.memory_bytes / 1073741824.0, d.memory_bandwidth / 1e12,
                         d.gemm_efficiency, compute_checked(d), aliases_for(k, n));
    }
    out += "  (2) published FSDP rows its tensor scale is fitted on, and median / p90 |error| of tokens/s/GPU, each "
           "source held out (docs/validation.md); 'as X': no rows of its own, X's fit; roofline: no kernel profile\n";
  }
  return out;
}

std::string one(Kind k, const std::string& name) {
  std::string out;
  const std::string also = aliases_for(k, name);
  const std::string aka = also.empty() ? "" : fmt::format(" (also: {})", also);
  if (k == Kind::Models) {
    out += fmt::format("# model preset {}{}; in a scenario: model: {} (or {{preset: {}, ...}} to change a value)\n",
                       name, aka, name, name);
    out += scenarios::model_yaml(models::preset(name));
  } else if (k == Kind::Clusters) {
    out += fmt::format("# cluster preset {}{}; in a scenario: cluster: {{preset: {}, nodes: N}}\n", name, aka, name);
    // How far to trust it, as a run on it quotes (at the preset's size: across nodes).
    const auto c = topologies::preset(name);
    if (const auto held = topologies::collective_held_out(topologies::connection_key(c)); !held.empty())
      out += fmt::format("# collectives {}, held out: {} (docs/calibration.md)\n", topologies::connection_text(c), held);
    out += topologies::cluster_yaml(c);
  } else {
    out += fmt::format("# GPU preset {}{}; in a cluster: gpu: {} (or {{preset: {}, ...}} to change a value)\n", name,
                       aka, name, name);
    const auto d = topologies::device(name);
    out += fmt::format("# training fit: {} (docs/validation.md)\n", compute_checked(d, true));
    out += topologies::device_yaml(d);
  }
  return out;
}

// The preset called `name` (or an alias of it) among `kinds`; InputError naming the closest.
std::pair<Kind, std::string> find_preset(const std::vector<Kind>& kinds, const std::string& name) {
  std::vector<std::string> all;
  Aliases aliases;
  for (Kind k : kinds) {
    for (const auto& n : names_of(k))
      if (n == name) return {k, n};
    for (const auto& [alias, target] : aliases_of(k))
      if (alias == name) return {k, target};
    const auto names = names_of(k);
    all.insert(all.end(), names.begin(), names.end());
    aliases.insert(aliases.end(), aliases_of(k).begin(), aliases_of(k).end());
  }
  throw InputError(fmt::format("show: {}", unknown_name("preset", name, all, aliases)));
}

int run(const std::vector<std::string>& args) {
  if (args.size() > 2) throw InputError("show: expected at most a kind (models, clusters, gpus) and a name");
  if (args.empty()) {
    fmt::print("{}\n{}\n{}", list(Kind::Models), list(Kind::Clusters), list(Kind::Gpus));
    return 0;
  }
  const auto kind = parse_kind(args[0]);
  if (args.size() == 2 && !kind)
    throw InputError(fmt::format("show: unknown kind '{}'{}; expected models, clusters or gpus", args[0],
                                 did_you_mean(args[0], {"models", "clusters", "gpus"})));
  if (args.size() == 1 && kind) {
    fmt::print("{}", list(*kind));
    return 0;
  }
  if (const std::string& what = args.back(); (!kind || *kind == Kind::Models) && what.size() > 5 &&
                                              what.substr(what.size() - 5) == ".json") {
    // A Hugging Face config.json: the shape tagcsim reads from it, as YAML a scenario takes.
    const auto m = models::model_from_hf_config(Input::load_file(what));
    fmt::print("# model from the Hugging Face config {}; in a scenario: model: {{hf_config: {}}} (a path relative "
               "to the scenario), or this map\n{}",
               what, what, scenarios::model_yaml(m));
    return 0;
  }
  const std::vector<Kind> kinds = kind ? std::vector<Kind>{*kind}
                                       : std::vector<Kind>{Kind::Models, Kind::Clusters, Kind::Gpus};
  const auto [k, name] = find_preset(kinds, args.back());
  fmt::print("{}", one(k, name));
  return 0;
}

}  // namespace

void add_show_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("show", "List the model, cluster and GPU presets, or print one with every value, "
                                         "its unit and its source");
  cmd->add_option("what", *args,
                  "[models|clusters|gpus] [NAME]; a NAME alone is looked up in every kind; a Hugging Face "
                  "config.json path prints the model it describes");
  cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace tagcsim::app
