// measurements.yaml: written by the CUDA side, read by everything else. Flow maps, one sample a
// line, numbers with 9 significant digits (json_number), strings as JSON strings (valid YAML).
#include "calibrate/box_measurements.hpp"

#include "common/input.hpp"
#include "common/json.hpp"
#include "models/kernel_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace tagcsim::calibrate {
namespace {

constexpr const char* kFormat = "tagcsim-box-measurements/1";

std::string q(const std::string& s) { return json_string(s); }
std::string n(double v) { return json_number(v); }

std::string ranks_text(const std::vector<int>& r) {
  std::string s = "[";
  for (std::size_t i = 0; i < r.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", r[i]);
  return s + "]";
}

std::string opt_string(const Input& map, std::string_view key) {
  auto v = map.find(key);
  return v ? v->as_string() : std::string();
}

}  // namespace

int BoxInfo::nvlinks_between(int a, int b) const {
  for (const auto& l : links)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return l.nvlinks;
  return -1;
}

double BoxInfo::nvlink_pair_fraction() const {
  if (links.empty()) return 0;
  int nv = 0;
  for (const auto& l : links) nv += l.nvlinks > 0;
  return double(nv) / double(links.size());
}

double AttentionSample::flops() const {
  models::Kernel k;
  k.kind = models::KernelKind::Attention;
  k.batch_heads = batch_heads, k.seq = seq, k.head_dim = head_dim, k.causal = causal;
  k.backward = direction == "bwd";
  return k.flops();
}

std::string gpu_slug(const std::string& gpu_name) {
  std::string s;
  for (char ch : gpu_name) {
    const char c = char(std::tolower(static_cast<unsigned char>(ch)));
    if (std::isalnum(static_cast<unsigned char>(c))) s += c;
    else if (!s.empty() && s.back() != '-') s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  if (s.rfind("nvidia-", 0) == 0) s = s.substr(7);
  if (s.rfind("tesla-", 0) == 0) s = s.substr(6);
  return s.empty() ? "gpu" : s;
}

std::string measurements_yaml(const BoxMeasurements& m) {
  const auto& b = m.box;
  std::string out = fmt::format("# tagcsim calibrate box: raw measurements (median of the timed runs).\n"
                                "# Fits and the files beside are made from this file alone (docs/calibration.md).\n"
                                "format: {}\ncommand: {}\nquick: {}\n",
                                kFormat, q(m.command), m.quick ? "true" : "false");
  out += fmt::format("box:\n  driver: {}\n  cuda_driver: {}\n  cuda_runtime: {}\n  nccl: {}\n  cublaslt: {}\n"
                     "  cudnn: {}\n  host: {}\n  date: {}\n  gpus:\n",
                     q(b.driver), q(b.cuda_driver), q(b.cuda_runtime), q(b.nccl), q(b.cublaslt), q(b.cudnn), q(b.host),
                     q(b.date));
  for (const auto& g : b.gpus)
    out += fmt::format("    - {{index: {}, name: {}, sm: {}, sms: {}, memory_bytes: {}, sm_clock_mhz: {}, "
                       "memory_clock_mhz: {}, bus_width_bits: {}, pci: {}}}\n",
                       g.index, q(g.name), g.sm, g.sms, n(g.memory_bytes), n(g.sm_clock_mhz), n(g.memory_clock_mhz),
                       g.bus_width_bits, q(g.pci));
  out += b.links.empty() ? "  links: []\n" : "  links:\n";
  for (const auto& l : b.links)
    out += fmt::format("    - {{a: {}, b: {}, p2p: {}, nvlinks: {}, performance_rank: {}}}\n", l.a, l.b,
                       l.p2p ? "true" : "false", l.nvlinks, l.performance_rank);
  out += m.nccl.empty() ? "nccl: []\n" : "nccl:\n";
  for (const auto& s : m.nccl)
    out += fmt::format("  - {{op: {}, ranks: {}, bytes: {}, time_s: {}, time_min_s: {}, iterations: {}, wrong: {}}}\n",
                       s.op, ranks_text(s.ranks), n(s.bytes), n(s.time_s), n(s.time_min_s), s.iterations, s.wrong);
  out += m.gemm.empty() ? "gemm: []\n" : "gemm:\n";
  for (const auto& s : m.gemm)
    out += fmt::format("  - {{m: {}, n: {}, k: {}, dtype: {}, seconds: {}, origin: {}}}\n", n(s.m), n(s.n), n(s.k),
                       s.dtype, n(s.seconds), q(s.origin));
  out += m.attention.empty() ? "attention: []\n" : "attention:\n";
  for (const auto& s : m.attention)
    out += fmt::format("  - {{kernel: {}, direction: {}, causal: {}, batch_heads: {}, seq: {}, head_dim: {}, "
                       "seconds: {}, origin: {}}}\n",
                       s.kernel, s.direction, s.causal ? "true" : "false", n(s.batch_heads), n(s.seq), n(s.head_dim),
                       n(s.seconds), q(s.origin));
  out += m.memory.empty() ? "memory: []\n" : "memory:\n";
  for (const auto& s : m.memory)
    out += fmt::format("  - {{kernel: {}, bytes: {}, seconds: {}}}\n", s.kernel, n(s.bytes), n(s.seconds));
  out += m.sm_holds.empty() ? "sm_holds: []\n" : "sm_holds:\n";
  for (const auto& s : m.sm_holds)
    out += fmt::format("  - {{blocks: {}, threads: {}, m: {}, n: {}, k: {}, alone_s: {}, beside_s: {}}}\n", s.blocks,
                       s.threads, n(s.m), n(s.n), n(s.k), n(s.alone_s), n(s.beside_s));
  out += fmt::format("launch: {{empty_kernel_s: {}, issue_s: {}}}\ntagc_bench: {}\n", n(m.empty_kernel_s),
                     n(m.issue_s), q(m.tagc_bench));
  out += m.notes.empty() ? "notes: []\n" : "notes:\n";
  for (const auto& s : m.notes) out += "  - " + q(s) + "\n";
  return out;
}

BoxMeasurements parse_measurements(const std::string& text, const std::string& file) {
  const Input doc = Input::load_string(text, file);
  if (!doc.is_map()) doc.fail("expected a box measurements file (a map)");
  doc.expect_keys({"format", "command", "quick", "box", "nccl", "gemm", "attention", "memory", "sm_holds", "launch",
                   "tagc_bench", "notes"});
  if (doc["format"].as_string() != kFormat)
    doc["format"].fail(fmt::format("expected '{}', got '{}'", kFormat, doc["format"].as_string()));
  BoxMeasurements m;
  m.command = doc["command"].as_string();
  m.quick = doc["quick"].as_bool();

  const Input b = doc["box"];
  b.expect_keys({"driver", "cuda_driver", "cuda_runtime", "nccl", "cublaslt", "cudnn", "host", "date", "gpus", "links"});
  m.box.driver = b["driver"].as_string();
  m.box.cuda_driver = b["cuda_driver"].as_string();
  m.box.cuda_runtime = b["cuda_runtime"].as_string();
  m.box.nccl = b["nccl"].as_string();
  m.box.cublaslt = b["cublaslt"].as_string();
  m.box.cudnn = b["cudnn"].as_string();
  m.box.host = opt_string(b, "host");
  m.box.date = opt_string(b, "date");
  const Input gpus = b["gpus"];
  if (gpus.size() == 0) gpus.fail("expected at least one GPU");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const Input g = gpus.at(i);
    g.expect_keys({"index", "name", "sm", "sms", "memory_bytes", "sm_clock_mhz", "memory_clock_mhz", "bus_width_bits",
                   "pci"});
    BoxGpu x;
    x.index = g["index"].as_int_between(0, 1023);
    if (x.index != int(i)) g["index"].fail(fmt::format("expected GPU {} here (GPUs are listed in order)", i));
    x.name = g["name"].as_string();
    x.sm = g["sm"].as_int_between(10, 1000);
    x.sms = g["sms"].as_int_between(1, 1 << 16);
    x.memory_bytes = g["memory_bytes"].as_positive();
    x.sm_clock_mhz = g["sm_clock_mhz"].as_non_negative();
    x.memory_clock_mhz = g["memory_clock_mhz"].as_non_negative();
    x.bus_width_bits = g["bus_width_bits"].as_int_between(0, 1 << 16);
    x.pci = opt_string(g, "pci");
    m.box.gpus.push_back(x);
  }
  const int ngpu = int(m.box.gpus.size());
  auto gpu_index = [&](const Input& v) {
    const int i = int(v.as_int());
    if (i < 0 || i >= ngpu) v.fail(fmt::format("expected a GPU index in [0, {}], got {}", ngpu - 1, i));
    return i;
  };
  const Input links = b["links"];
  for (std::size_t i = 0; i < links.size(); ++i) {
    const Input l = links.at(i);
    l.expect_keys({"a", "b", "p2p", "nvlinks", "performance_rank"});
    m.box.links.push_back({gpu_index(l["a"]), gpu_index(l["b"]), l["p2p"].as_bool(),
                           l["nvlinks"].as_int_between(-1, 1024), l["performance_rank"].as_int_between(-1, 1024)});
  }

  const Input nccl = doc["nccl"];
  for (std::size_t i = 0; i < nccl.size(); ++i) {
    const Input s = nccl.at(i);
    s.expect_keys({"op", "ranks", "bytes", "time_s", "time_min_s", "iterations", "wrong"});
    NcclSample x;
    x.op = s["op"].as_choice({"all_gather", "reduce_scatter", "all_reduce", "reduce", "broadcast"});
    const Input r = s["ranks"];
    if (r.size() == 0) r.fail("expected at least one GPU index");
    for (std::size_t j = 0; j < r.size(); ++j) x.ranks.push_back(gpu_index(r.at(j)));
    x.bytes = s["bytes"].as_positive();
    x.time_s = s["time_s"].as_positive();
    x.time_min_s = s["time_min_s"].as_positive();
    x.iterations = s["iterations"].as_int_between(1, 1 << 20);
    x.wrong = long(s["wrong"].as_int());
    if (x.wrong < 0) s["wrong"].fail("expected a count >= 0");
    m.nccl.push_back(x);
  }
  const Input gemm = doc["gemm"];
  for (std::size_t i = 0; i < gemm.size(); ++i) {
    const Input s = gemm.at(i);
    s.expect_keys({"m", "n", "k", "dtype", "seconds", "origin"});
    m.gemm.push_back({s["m"].as_positive(), s["n"].as_positive(), s["k"].as_positive(),
                      s["dtype"].as_choice({"bf16", "fp16", "tf32", "fp8"}), s["seconds"].as_positive(),
                      opt_string(s, "origin")});
  }
  const Input attn = doc["attention"];
  for (std::size_t i = 0; i < attn.size(); ++i) {
    const Input s = attn.at(i);
    s.expect_keys({"kernel", "direction", "causal", "batch_heads", "seq", "head_dim", "seconds", "origin"});
    AttentionSample x;
    x.kernel = s["kernel"].as_string();
    x.direction = s["direction"].as_choice({"fwd", "bwd"});
    x.causal = s["causal"].as_bool();
    x.batch_heads = s["batch_heads"].as_positive();
    x.seq = s["seq"].as_positive();
    x.head_dim = s["head_dim"].as_positive();
    x.seconds = s["seconds"].as_positive();
    x.origin = opt_string(s, "origin");
    m.attention.push_back(x);
  }
  const Input mem = doc["memory"];
  for (std::size_t i = 0; i < mem.size(); ++i) {
    const Input s = mem.at(i);
    s.expect_keys({"kernel", "bytes", "seconds"});
    m.memory.push_back(
        {s["kernel"].as_choice({"copy", "scale", "add", "norm"}), s["bytes"].as_positive(), s["seconds"].as_positive()});
  }
  if (const auto holds = doc.find("sm_holds"))
    for (std::size_t i = 0; i < holds->size(); ++i) {
      const Input s = holds->at(i);
      s.expect_keys({"blocks", "threads", "m", "n", "k", "alone_s", "beside_s"});
      m.sm_holds.push_back({s["blocks"].as_int_between(1, 1 << 16), s["threads"].as_int_between(32, 1024),
                            s["m"].as_positive(), s["n"].as_positive(), s["k"].as_positive(),
                            s["alone_s"].as_positive(), s["beside_s"].as_positive()});
    }
  const Input launch = doc["launch"];
  launch.expect_keys({"empty_kernel_s", "issue_s"});
  m.empty_kernel_s = launch["empty_kernel_s"].as_non_negative();
  m.issue_s = launch["issue_s"].as_non_negative();
  m.tagc_bench = doc["tagc_bench"].as_string();
  const Input notes = doc["notes"];
  for (std::size_t i = 0; i < notes.size(); ++i) m.notes.push_back(notes.at(i).as_string());
  return m;
}

BoxMeasurements load_measurements(const std::string& path) {
  return parse_measurements(read_text_file(path, "cannot open the box measurements file"), path);
}

}  // namespace tagcsim::calibrate
