// The published nccl-tests tables (validation/data/published_measurements.yaml) -> Points,
// grouped into the tables they were copied from.
#include "calibrate/nccl_tests.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#ifndef TAGCSIM_SOURCE_DIR
#define TAGCSIM_SOURCE_DIR "."
#endif

namespace tagcsim::calibrate {
namespace {

std::string opt_string(const Input& map, std::string_view key) {
  auto v = map.find(key);
  return v && !v->is_null() ? v->as_string() : std::string();
}

bool contains(const std::string& s, std::string_view needle) { return s.find(needle) != std::string::npos; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char ch : s) {
    if (ch == sep) out.emplace_back();
    else out.back().push_back(ch);
  }
  return out;
}

// Entry ids differ only in the tokens that vary along the sweep ("...-allreduce-32768",
// "nccl-h200-1n4g-..."): the group is named by the tokens all its ids share.
std::string group_name(const std::vector<std::string>& ids) {
  auto first = split(ids.front(), '-');
  bool same_shape = true;
  for (const auto& id : ids) same_shape = same_shape && split(id, '-').size() == first.size();
  std::vector<bool> keep(first.size(), true);
  for (const auto& id : ids) {
    auto t = split(id, '-');
    for (std::size_t i = 0; i < first.size(); ++i)
      if (same_shape ? t[i] != first[i] : (i >= t.size() || t[i] != first[i])) {
        keep[i] = false;
        if (!same_shape) std::fill(keep.begin() + i, keep.end(), false);  // common prefix only
      }
  }
  if (ids.size() == 1) keep.back() = false;  // a lone entry: drop its size token
  std::string out;
  for (std::size_t i = 0; i < first.size(); ++i)
    if (keep[i]) out += (out.empty() ? "" : "-") + first[i];
  return out.empty() ? ids.front() : out;
}

struct Measured {
  double time_s = 0, algbw = 0, busbw = 0;
  bool derived = false;
  std::string column;
  unsigned algos = 0;  // NCCL algorithms the run allowed, 0 = default
};

// The three shapes `measured:` takes in the file. A GPU-count sweep that published bus bandwidth with
// and without NVLink SHARP gives two points: the default run and the NVLS-off one (NCCL_NVLS_ENABLE=0,
// so ring or tree).
std::vector<Measured> read_measured(const Input& m, std::optional<sim::CollectiveOp> op, int ranks, double bytes) {
  auto gbps = [](const Input& map, std::string_view key) {
    auto v = map.find(key);
    return v ? v->as_non_negative() * 1e9 : 0.0;
  };
  if (m.has("time_us"))
    return {{m["time_us"].as_positive() * 1e-6, gbps(m, "algbw_GBps"), gbps(m, "busbw_GBps"), false, "time_us"}};
  if (m.has("out_of_place") || m.has("in_place")) {
    // Both placements time the same collective; noise only adds time, so take the faster.
    Measured best;
    for (auto key : {"out_of_place", "in_place"}) {
      auto p = m.find(key);
      if (!p) continue;
      const double t = (*p)["time_us"].as_positive() * 1e-6;
      if (best.time_s == 0 || t < best.time_s)
        best = {t, gbps(*p, "algbw_GBps"), gbps(*p, "busbw_GBps"), false, "min(out_of_place, in_place).time_us"};
    }
    return {best};
  }
  // Only a bus bandwidth was published (GPU-count sweeps): time = factor * S / busbw.
  std::vector<Measured> out;
  for (auto key : {"busbw_GBps_default", "busbw_GBps", "busbw_GBps_NCCL_NVLS_ENABLE_0"}) {
    auto v = m.find(key);
    if (!v) continue;
    if (!op) v->fail("a time can only be derived from busbw for collectives the model has");
    const double bus = v->as_positive() * 1e9;
    const double t = sim::bus_factor(*op, ranks) * bytes / bus;
    const bool nvls_off = std::string(key).find("NVLS_ENABLE_0") != std::string::npos;
    out.push_back({t, bytes / t, bus, true, fmt::format("{} (time derived: bus factor x bytes / busbw)", key),
                   nvls_off ? unsigned(topologies::NcclPins::Ring | topologies::NcclPins::Tree) : 0u});
  }
  if (out.empty()) m.fail("expected time_us, out_of_place/in_place, or busbw_GBps_* keys");
  return out;
}

// "Ring,Tree" / "NVLS" / "simple": an NcclPins mask; a word NCCL does not know is an error at its line.
unsigned nccl_mask(const Input& v, unsigned (*parse)(std::string_view), const char* what) {
  unsigned mask = 0;
  for (const auto& word : split(v.as_string(), ',')) {
    std::string w = word;
    w.erase(0, w.find_first_not_of(' '));
    w.erase(w.find_last_not_of(' ') + 1);
    const unsigned bit = parse(w);
    if (!bit) v.fail(fmt::format("unknown {} '{}'", what, w));
    mask |= bit;
  }
  return mask;
}

// The release a software note names as "NCCL 2.25.1" (or "nccl 2.18.5"): not any version in it, which
// may be nccl-tests' own ("nccl-tests 2.17.1") or a library's.
int nccl_version_named(const std::string& text) {
  for (std::size_t at = 0; at + 5 < text.size(); ++at) {
    const bool word_start = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    if (!word_start || text[at + 4] != ' ' || !std::isdigit(static_cast<unsigned char>(text[at + 5]))) continue;
    std::string word = text.substr(at, 4);
    for (auto& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (word == "nccl") return parse_nccl_version(std::string_view(text).substr(at + 5));
  }
  return 0;
}

}  // namespace

std::string default_published_path() {
  return (std::filesystem::path(TAGCSIM_SOURCE_DIR) / "validation" / "data" / "published_measurements.yaml").string();
}

std::vector<PublishedGroup> load_published(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw InputError(fmt::format("{}: published measurements not found (pass --data FILE)", path));
  const Input doc = Input::load_file(path);
  const Input entries = doc["entries"];
  std::vector<PublishedGroup> groups;
  std::map<std::string, std::size_t> index;  // group key -> position in `groups`
  std::map<std::size_t, std::vector<std::string>> ids;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Input e = entries.at(i);
    if (e["kind"].as_string() != "nccl") continue;
    const Input hw = e["hardware"];
    const Input setup = e["setup"];
    const Input src = e["source"];
    const std::string id = e["id"].as_string();
    const int nodes = static_cast<int>(hw["nodes"].as_int_at_least(1));
    const int gpn = static_cast<int>(hw["gpus_per_node"].as_int_at_least(1));
    if (setup["nranks"].as_int() != std::int64_t(nodes) * gpn)
      setup["nranks"].fail(fmt::format("expected nodes x gpus_per_node = {} x {} ranks", nodes, gpn));
    const std::string collective = setup["collective"].as_string();
    Point base;
    base.op_name = collective;
    for (auto op : {sim::CollectiveOp::AllGather, sim::CollectiveOp::ReduceScatter, sim::CollectiveOp::AllReduce,
                    sim::CollectiveOp::Reduce, sim::CollectiveOp::Broadcast, sim::CollectiveOp::AllToAll})
      if (collective == sim::to_string(op)) base.op = op;
    base.nodes = nodes;
    base.gpus_per_node = gpn;
    base.bytes = setup["message_bytes"].as_positive();
    base.source = opt_string(src, "ref");
    // nccl-tests -g N: one process launching N GPUs (the command line, or the launch note).
    for (const std::string& text : {opt_string(setup, "command"), opt_string(setup, "launch")})
      if (auto at = text.find("-g "); at != std::string::npos)
        base.gpus_per_process = std::max(1, std::atoi(text.c_str() + at + 3));
    // What the run pinned (NCCL_ALGO / NCCL_PROTO, NCCL's spellings) and the NCCL it ran.
    if (auto a = setup.find("nccl_algo")) base.algos = nccl_mask(*a, topologies::parse_nccl_algo, "NCCL algorithm");
    if (auto pr = setup.find("nccl_proto")) base.protos = nccl_mask(*pr, topologies::parse_nccl_proto, "NCCL protocol");
    base.nccl_version = parse_nccl_version(opt_string(setup, "nccl_version"));
    if (!base.nccl_version) base.nccl_version = nccl_version_named(opt_string(hw, "software"));
    for (const Measured& m : read_measured(e["measured"], base.op, base.ranks(), base.bytes)) {
      Point p = base;
      if (m.algos) p.algos = m.algos;
      p.time_s = m.time_s;
      p.algbw = m.algbw;
      p.busbw = m.busbw;
      p.time_derived = m.derived;
      p.where = id + (m.algos ? " (NVLS off)" : "");

      const std::string inter = opt_string(hw, "inter_node");
      const std::string version = opt_string(setup, "nccl_version") + opt_string(hw, "software");
      const std::string source =
          src.has("url") ? opt_string(src, "url") : opt_string(src, "repo") + "/" + opt_string(src, "path");
      // One table = one source, one machine, one benchmark run, one collective, one kind of column.
      const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", source, hw["gpu"].as_string(),
                                          opt_string(hw, "intra_node"), inter, nodes, opt_string(setup, "benchmark"),
                                          version, collective, m.column);
      auto [it, fresh] = index.try_emplace(key, groups.size());
      if (fresh) {
        PublishedGroup g;
        g.collective = collective;
        g.gpu = hw["gpu"].as_string();
        g.intra_node = opt_string(hw, "intra_node");
        g.inter_node = inter;
        g.nodes = nodes;
        g.source = source;
        g.source_key = p.source;
        g.measurement = m.column;
        g.system = opt_string(hw, "system");
        g.cpu = opt_string(hw, "cpu");
        groups.push_back(std::move(g));
      }
      PublishedGroup& g = groups[it->second];
      if (const std::string why = opt_string(e, "not_fitted"); !why.empty()) g.not_fitted = why;
      if (g.not_fitted.empty() && base.op == sim::CollectiveOp::AllToAll)
        g.not_fitted = "an all-to-all: predicted from what the rings and trees fitted, never fitted itself";
      for (auto k : {"algorithm_hint", "algorithm_default"}) {
        const std::string note = opt_string(setup, k);
        const std::string tagged = fmt::format("{}: {}", k, note);
        if (!note.empty() && !contains(g.algorithm_note, tagged))
          g.algorithm_note += (g.algorithm_note.empty() ? "" : "; ") + tagged;
      }
      g.points.push_back(std::move(p));
      ids[it->second].push_back(id);
    }
  }
  for (std::size_t i = 0; i < groups.size(); ++i)
    groups[i].name = group_name(ids[i]) + (groups[i].measurement.find("NVLS_ENABLE_0") != std::string::npos ? "-nvls-off" : "");
  return groups;
}

std::string published_base_cluster(const PublishedGroup& g) {
  // The presets describe whole machines; a published table names the GPU and the links, and sometimes
  // the machine itself. H200 first: its description mentions H100 ("same NVLink generation as H100 SXM").
  const bool h200 = contains(g.gpu, "H200"), a100 = contains(g.gpu, "A100"), h100 = !h200 && contains(g.gpu, "H100");
  const std::string n = fmt::format("nodes: {}", g.nodes);
  // A named machine: its preset carries its NICs, transport and host CPU. An ND GB200 v6 VM is one
  // compute tray of an NVL72 rack: its 4 GPUs, on the rack's NVLink. OCI's GB200 and GB300 hosts
  // are trays of NVL72 racks joined by RoCE (a table gives the GPUs of each rack it used).
  struct System {
    std::string_view name, preset, more;
  };
  constexpr System kSystems[] = {
      {"ND96amsr A100 v4", "azure-nd-a100-v4", ""}, {"ND96isr H100 v5", "azure-nd-h100-v5", ""},
      {"ND96isr H200 v5", "azure-nd-h200-v5", ""},  {"a3-megagpu-8g", "gcp-a3-mega", ""},
      {"a3-highgpu-8g", "gcp-a3-high", ""},        {"a3-ultragpu-8g", "gcp-a3-ultra", ""},
      {"p5.48xlarge", "aws-p5", ""},               {"p5e.48xlarge", "aws-p5e", ""},
      {"p4de.24xlarge", "aws-p4de", ""},           {"a4-highgpu-8g", "gcp-a4-high", ""},
      {"OCI BM.GPU.GB200.4", "gb200-nvl72", ", nics: {transport: roce}"},
      {"BM.GPU.GB300.4", "gb300-nvl72", ", nics: {transport: roce}"},
      {"ND GB200 v6", "gb200-nvl72", ", gpus_per_node: 4"}, {"GB200 NVL72", "gb200-nvl72", ""},
      {"Alps GH200", "alps-gh200", ""}, {"Perlmutter", "perlmutter-a100", ""}};
  for (const auto& m : kSystems)
    if (contains(g.system, m.name) || contains(g.gpu, m.name)) return fmt::format("{{preset: {}, {}{}}}", m.preset, n, m.more);
  const bool efa = contains(g.inter_node, "EFA");
  if (efa && a100) return fmt::format("{{preset: aws-p4de, {}}}", n);
  if (efa && h100) return fmt::format("{{preset: aws-p5, {}}}", n);
  if (efa && h200) return fmt::format("{{preset: aws-p5e, {}}}", n);
  if (efa) return {};
  // Other clouds' fabrics, by the transport the table names (TCPXO before TCPX: it contains it).
  const std::string gpu = h200 ? ", gpu: h200-sxm" : "";
  if (contains(g.inter_node, "TCPXO")) return fmt::format("{{preset: gcp-a3-mega, {}{}}}", n, gpu);
  if (contains(g.inter_node, "TCPX")) return fmt::format("{{preset: gcp-a3-high, {}{}}}", n, gpu);
  if (contains(g.inter_node, "RoCE") && (h100 || h200))
    return h200 ? fmt::format("{{preset: gcp-a3-ultra, {}}}", n) : fmt::format("{{preset: oci-h100-roce, {}}}", n);
  // A100 over RoCE (OCI's BM.GPU4.8: 1.6 Tb/s per node, as the DGX A100's eight 200 Gb/s NICs).
  if (contains(g.inter_node, "RoCE") && a100) return fmt::format("{{preset: dgx-a100-ib200, {}, nics: {{transport: roce}}}}", n);
  if (g.nodes == 1 || contains(g.inter_node, "InfiniBand")) {
    if (a100) return fmt::format("{{preset: dgx-a100-ib200, {}}}", n);
    if (h100) return fmt::format("{{preset: dgx-h100-ib400, {}}}", n);
    if (h200) return fmt::format("{{preset: dgx-h200-ib400, {}}}", n);
    if (contains(g.gpu, "B200")) return fmt::format("{{preset: dgx-b200-ib400, {}}}", n);
  }
  return {};
}

}  // namespace tagcsim::calibrate
