#include "kernels/bench.hpp"
#include "kernels/rules.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace tagcsim::kernels {
namespace {

constexpr double kSparsity = 0.8;       // per rank
constexpr double kUnionSparsity = 0.64; // 2 ranks at 0.8, independent: 1 - 0.36
constexpr double kRatio = 2.0;
constexpr std::size_t kShards = 8;

// Gradient-like values without a costly RNG: random sign and mantissa,
// magnitudes log-uniform over 2^-4 .. 2^-27, so bisection has work to do.
std::vector<float> synthetic_gradient(std::size_t n) {
  std::vector<float> v(n);
  std::uint64_t s = 0x9e3779b97f4a7c15ull;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const auto r = std::uint32_t(s >> 32);
    const std::uint32_t exponent = 127u - 4u - (r % 24u);
    x = bits_float(((r & 1u) << 31) | (exponent << 23) | (std::uint32_t(s) & 0x7fffffu));
  }
  return v;
}

struct Timing {
  double median = 0, min = 0;
  int runs = 0;
};

class Timer {
 public:
  Timer(Engine& e, const BenchOptions& o) : e_(e), o_(o) {}
  Timing measure(const std::function<void()>& setup, const std::function<void()>& work) {
    const bool cuda = e_.backend() == Backend::Cuda;
    std::vector<double> t;
    setup();
    double first = e_.time_seconds(work);
    int warm = o_.warmup >= 0 ? o_.warmup : (cuda ? 3 : (first > 0.25 ? 0 : 1));
    if (warm == 0) t.push_back(first);
    for (int i = 1; i < warm; ++i) {
      setup();
      e_.time_seconds(work);
    }
    int reps = o_.repeats > 0 ? o_.repeats : (cuda ? 25 : std::clamp(int(0.5 / std::max(first, 1e-9)), 1, 25));
    while (int(t.size()) < reps) {
      setup();
      t.push_back(e_.time_seconds(work));
    }
    std::sort(t.begin(), t.end());
    Timing r;
    r.runs = int(t.size());
    r.min = t.front();
    r.median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
    return r;
  }

 private:
  Engine& e_;
  const BenchOptions& o_;
};

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:g} {}", b, units[u]);
}

}  // namespace

BenchReport run_bench(const BenchOptions& o) {
  EngineOptions eo;
  eo.topk_histogram = o.topk_histogram;
  auto engine = make_engine(o.backend, eo);
  Engine& e = *engine;
  BenchReport rep;
  rep.device = e.device_name();
  rep.backend = to_string(o.backend);
  rep.topk_histogram = o.backend == Backend::Cuda ? to_string(o.topk_histogram) : "-";
  rep.command = o.command;
  rep.date = utc_now();
  Timer timer(e, o);
  auto log = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };

  // Reference bandwidth: measured copy of up to 256 MiB (read + write bytes).
  {
    const std::size_t bytes = std::size_t(256) << 20;
    Buffer<std::uint8_t> a(e, bytes), b(e, bytes);
    a.zero();
    Timing t = timer.measure([] {}, [&] { e.copy(b.get(), a.get(), bytes); });
    rep.copy_bandwidth = 2.0 * double(bytes) / t.median;
  }
  if (o.bandwidth > 0) {
    rep.memory_bandwidth = o.bandwidth;
    rep.memory_bandwidth_basis = "given with --bandwidth";
  } else if (e.peak_memory_bandwidth() > 0) {
    rep.memory_bandwidth = e.peak_memory_bandwidth();
    rep.memory_bandwidth_basis = "device peak: 2 x memory clock x bus width (cudaDevAttrMemoryClockRate, GlobalMemoryBusWidth)";
  } else {
    rep.memory_bandwidth = rep.copy_bandwidth;
    rep.memory_bandwidth_basis = "measured: 256 MiB memory copy, read + write bytes per second";
  }

  for (double size : o.sizes_bytes) {
    const std::size_t n = std::max<std::size_t>(kBlock * kShards, std::size_t(size / 4));
    auto add = [&](Stage s, std::optional<IndexEncoding> enc, const Timing& t) {
      BenchPoint p;
      p.stage = s;
      p.encoding = enc;
      p.elements = double(n);
      p.bytes = 4.0 * double(n);
      p.seconds = t.median;
      p.seconds_min = t.min;
      p.runs = t.runs;
      p.gbps = stage_cost(s, enc.value_or(IndexEncoding::Bit1Or)).bytes_per_element * double(n) / t.median / 1e9;
      p.bandwidth_fraction = p.gbps * 1e9 / rep.memory_bandwidth;
      rep.points.push_back(p);
      log(fmt::format("{:>10}  {:<16} {:<9} {:>10.4g} s  {:>8.2f} GB/s  {:>5.1f}%", human_bytes(p.bytes), to_string(s),
                      enc ? to_string(*enc) : "", p.seconds, p.gbps, 100 * p.bandwidth_fraction));
    };
    Buffer<float> grad(e, synthetic_gradient(n)), res(e, n), out(e, n), vals(e, n);
    for (auto [stage, method] : {std::pair{Stage::SparsifyBisect, SparsifyMethod::Bisect},
                                 std::pair{Stage::SparsifyTopk, SparsifyMethod::TopK}}) {
      add(stage, std::nullopt,
          timer.measure([&] { res.zero(); },
                        [&] { e.sparsify(grad.get(), res.get(), out.get(), n, method, kSparsity, nullptr); }));
    }
    // This rank's values (80% sparse), and the union of two ranks (64%): the global index.
    res.zero();
    e.sparsify(grad.get(), res.get(), vals.get(), n, SparsifyMethod::TopK, kSparsity, nullptr);
    res.zero();
    e.sparsify(grad.get(), res.get(), out.get(), n, SparsifyMethod::TopK, kUnionSparsity, nullptr);
    const IndexEncoding encs[] = {IndexEncoding::Bit1Or, IndexEncoding::Bit4Sum, IndexEncoding::Bit8Max};
    std::vector<Buffer<std::uint8_t>> idx;
    for (auto enc : encs) {
      idx.emplace_back(e, index_bytes(n, enc));
      add(Stage::IndexCreate, enc,
          timer.measure([] {}, [&] { e.create_index(out.get(), n, enc, idx.back().get()); }));
    }
    for (std::size_t k = 0; k < 3; ++k)  // idempotent: the same flags land in the same bits
      add(Stage::IndexRead, encs[k],
          timer.measure([] {}, [&] { e.read_index(vals.get(), idx[k].get(), n, encs[k]); }));

    const SketchShape shape = sketch_shape(n, kRatio), shard = sketch_shape(n / kShards, kRatio);
    Buffer<float> sketch(e, std::max(shape.counters(), kShards * shard.counters())), sk_backup(e, shape.counters());
    add(Stage::Compress, std::nullopt,
        timer.measure([] {}, [&] { e.compress(vals.get(), shape, sketch.get(), nullptr); }));
    add(Stage::CompressBatched, std::nullopt,
        timer.measure([] {}, [&] { e.compress_batched(vals.get(), kShards, shard, sketch.get(), nullptr); }));

    // Decode at load 0.72: the union's sketch and mapping, restored before each run.
    Buffer<std::uint32_t> mapping(e, shape.counters()), map_backup(e, shape.counters());
    Buffer<std::uint8_t> state(e, shape.blocked()), st_backup(e, shape.blocked());
    e.compress(out.get(), shape, sketch.get(), nullptr);
    e.build_mapping(idx[0].get(), IndexEncoding::Bit1Or, shape, mapping.get());
    e.decode_begin(idx[0].get(), IndexEncoding::Bit1Or, shape, res.get(), state.get());
    e.copy(sk_backup.get(), sketch.get(), shape.counters() * 4);
    e.copy(map_backup.get(), mapping.get(), shape.counters() * 4);
    e.copy(st_backup.get(), state.get(), shape.blocked());
    auto restore = [&] {
      e.copy(sketch.get(), sk_backup.get(), shape.counters() * 4);
      e.copy(mapping.get(), map_backup.get(), shape.counters() * 4);
      e.copy(state.get(), st_backup.get(), shape.blocked());
    };
    add(Stage::DecodeRound, std::nullopt,
        timer.measure(restore, [&] { e.peel_round(sketch.get(), mapping.get(), shape, res.get(), state.get()); }));
    add(Stage::Estimate, std::nullopt,
        timer.measure(restore, [&] { e.estimate(sketch.get(), shape, res.get(), state.get()); }));
  }
  return rep;
}

std::string bench_json(const BenchReport& r) {
  auto q = [](const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      o += c;
    }
    return o + "\"";
  };
  std::string j = "{\n";
  j += "  \"format\": \"tagcsim-kernel-profile/1\",\n";
  j += fmt::format("  \"device\": {},\n  \"backend\": {},\n", q(r.device), q(r.backend));
  j += fmt::format("  \"source\": {},\n", q("measured: " + r.command + ", " + r.date));
  j += fmt::format("  \"command\": {},\n  \"date\": {},\n", q(r.command), q(r.date));
  j += fmt::format("  \"memory_bandwidth\": {:.6g},\n  \"memory_bandwidth_basis\": {},\n", r.memory_bandwidth,
                   q(r.memory_bandwidth_basis));
  j += fmt::format("  \"measured_copy_bandwidth\": {:.6g},\n", r.copy_bandwidth);
  j += "  \"operating_point\": {\"sparsity\": 0.8, \"union_density\": 0.36, \"ratio\": 2, \"batched_shards\": 8, "
       "\"decode_load\": 0.72, \"estimate\": \"every flagged element unknown\", ";
  j += fmt::format("\"topk_histogram\": {}}},\n", q(r.topk_histogram));
  j += "  \"stages\": [";
  bool first_series = true;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    bool seen = false;
    for (std::size_t k = 0; k < i; ++k) seen = seen || (r.points[k].stage == p.stage && r.points[k].encoding == p.encoding);
    if (seen) continue;
    const StageCost c = stage_cost(p.stage, p.encoding.value_or(IndexEncoding::Bit1Or));
    j += first_series ? "\n" : ",\n";
    first_series = false;
    j += fmt::format("    {{\"stage\": {}, \"encoding\": {}, \"bytes_per_element\": {:g}, \"host_syncs\": {},\n",
                     q(to_string(p.stage)), p.encoding ? q(to_string(*p.encoding)) : "null", c.bytes_per_element,
                     c.host_syncs);
    j += "     \"points\": [";
    bool first = true;
    for (const auto& s : r.points) {
      if (s.stage != p.stage || s.encoding != p.encoding) continue;
      j += first ? "\n" : ",\n";
      first = false;
      j += fmt::format(
          "       {{\"elements\": {:.0f}, \"bytes\": {:.0f}, \"seconds\": {:.6g}, \"seconds_min\": {:.6g}, \"runs\": {}, "
          "\"gbps\": {:.4g}, \"bandwidth_fraction\": {:.4g}}}",
          s.elements, s.bytes, s.seconds, s.seconds_min, s.runs, s.gbps, s.bandwidth_fraction);
    }
    j += "]}";
  }
  j += "\n  ]\n}\n";
  return j;
}

std::string bench_table(const BenchReport& r) {
  std::string t = fmt::format("device: {} ({} back end)\nreference bandwidth: {:.2f} GB/s ({}); measured copy {:.2f} GB/s\n",
                              r.device, r.backend, r.memory_bandwidth / 1e9, r.memory_bandwidth_basis,
                              r.copy_bandwidth / 1e9);
  if (r.topk_histogram != "-") t += fmt::format("top-k histogram: {}\n", r.topk_histogram);
  t += "\n";
  t += fmt::format("{:<10} {:<16} {:<9} {:>12} {:>10} {:>8} {:>5}\n", "size", "stage", "encoding", "median", "GB/s",
                   "of bw", "runs");
  for (const auto& p : r.points)
    t += fmt::format("{:<10} {:<16} {:<9} {:>10.4g} s {:>10.2f} {:>7.1f}% {:>5}\n", human_bytes(p.bytes),
                     to_string(p.stage), p.encoding ? to_string(*p.encoding) : "-", p.seconds, p.gbps,
                     100 * p.bandwidth_fraction, p.runs);
  return t;
}

}  // namespace tagcsim::kernels
