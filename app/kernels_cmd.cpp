// `tagcsim kernels bench|quality`: time the TAGC kernels, and measure what
// their decode recovers. Both write data that the simulator reads.
#include "app/commands.hpp"
#include "common/input.hpp"
#include "kernels/bench.hpp"
#include "kernels/quality.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

namespace tagcsim::app {
namespace {

namespace k = tagcsim::kernels;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<double> numbers(const std::string& s, const char* flag, double lo, double hi, bool lo_open) {
  std::vector<double> out;
  for (const auto& item : split(s)) {
    double v;
    try {
      std::size_t used = 0;
      v = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw InputError(fmt::format("{}: expected a comma-separated list of numbers, got '{}'", flag, item));
    }
    if (!(lo_open ? v > lo : v >= lo) || !(v <= hi))
      throw InputError(fmt::format("{}: {} is out of range (expected {}{}, {}]", flag, item, lo_open ? "(" : "[", lo, hi));
    out.push_back(v);
  }
  if (out.empty()) throw InputError(fmt::format("{}: expected at least one value", flag));
  return out;
}

// The program as the user ran it (its file name), for the recorded command.
std::string program_name(const CLI::App& root) {
  std::string n = root.get_name();
  auto slash = n.find_last_of('/');
  if (slash != std::string::npos) n = n.substr(slash + 1);
  return n.empty() ? "tagcsim" : n;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw InputError(fmt::format("cannot write '{}'", path));
  f << text;
  if (!f) throw InputError(fmt::format("writing '{}' failed", path));
}

struct BenchArgs {
  std::string backend = "cpu", sizes = "64KiB,1MiB,16MiB,256MiB,1GiB", json, format = "table", bandwidth;
  std::string topk_histogram = "warp";
  int repeats = 0, warmup = -1;
};

void run_bench(const BenchArgs& a, const std::string& program, int& exit_code) {
  k::BenchOptions o;
  o.backend = k::parse_backend(a.backend, "--backend");
  o.sizes_bytes.clear();
  for (const auto& s : split(a.sizes)) o.sizes_bytes.push_back(parse_bytes(s, "--sizes"));
  if (o.sizes_bytes.empty()) throw InputError("--sizes: expected at least one size, e.g. 64KiB,256MiB");
  if (a.repeats < 0) throw InputError("--repeats: expected 0 (automatic) or more");
  o.repeats = a.repeats;
  o.warmup = a.warmup;
  if (!a.bandwidth.empty()) o.bandwidth = parse_bandwidth(a.bandwidth, "--bandwidth");
  o.topk_histogram = k::parse_topk_histogram(a.topk_histogram, "--topk-histogram");
  if (a.format != "table" && a.format != "json")
    throw InputError(fmt::format("--format: expected table or json, got '{}'", a.format));
  o.command = fmt::format("{} kernels bench --backend {} --sizes {}", program, a.backend, a.sizes);
  if (a.repeats) o.command += fmt::format(" --repeats {}", a.repeats);
  if (a.warmup >= 0) o.command += fmt::format(" --warmup {}", a.warmup);
  if (!a.bandwidth.empty()) o.command += fmt::format(" --bandwidth '{}'", a.bandwidth);
  if (a.topk_histogram != "warp") o.command += " --topk-histogram " + a.topk_histogram;
  if (!a.json.empty()) o.command += " --json " + a.json;
  o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  k::BenchReport r;
  try {
    r = k::run_bench(o);
  } catch (const k::BackendUnavailable& e) {
    throw InputError(fmt::format("--backend {}: {}", a.backend, e.what()));
  }
  const std::string json = k::bench_json(r);
  if (!a.json.empty()) write_file(a.json, json);
  fmt::print("{}", a.format == "json" ? json : k::bench_table(r));
  exit_code = 0;
}

struct QualityArgs {
  std::string ranks = "2,4,8,16,32,64", sparsity = "0.8,0.9,0.99", overlap = "0,0.5,1", ratio = "1.5,2,4,10";
  std::string encodings = "1bit-sum,1bit-or,4bit-sum,8bit-max", curve_rows = "16,64,256,1024", out;
  std::string curve_loads = "default";
  int blocks = 256;
  unsigned seed = 1;
  bool quiet = false;
};

void run_quality(const QualityArgs& a, const std::string& program, int& exit_code) {
  k::QualityGrid g;
  g.ranks.clear();
  for (double r : numbers(a.ranks, "--ranks", 1, 4096, false)) g.ranks.push_back(int(r));
  g.sparsity = numbers(a.sparsity, "--sparsity", 0.5, 0.999999, false);
  g.overlap = numbers(a.overlap, "--overlap", 0, 1, false);
  g.ratio = numbers(a.ratio, "--ratio", 1, 1e6, true);
  g.encodings.clear();
  for (const auto& e : split(a.encodings)) g.encodings.push_back(k::parse_index_encoding(e, "--encodings"));
  g.curve_rows.clear();
  if (a.curve_rows != "none")
    for (double r : numbers(a.curve_rows, "--curve-rows", 1, 1 << 20, false)) g.curve_rows.push_back(std::size_t(r));
  if (a.blocks < 1) throw InputError("--blocks: expected at least 1");
  if (a.curve_loads != "default") g.curve_loads = numbers(a.curve_loads, "--curve-loads", 0, 1000, true);
  g.blocks = std::size_t(a.blocks);
  g.seed = a.seed;

  const std::string command = fmt::format(
      "{} kernels quality --ranks {} --sparsity {} --overlap {} --ratio {} --encodings {} --blocks {} "
      "--curve-rows {} --curve-loads {} --seed {}{}",
      program, a.ranks, a.sparsity, a.overlap, a.ratio, a.encodings, a.blocks, a.curve_rows, a.curve_loads, a.seed,
      a.out.empty() ? "" : " --out " + a.out);
  auto engine = k::make_engine(k::Backend::Cpu);
  std::function<void(const std::string&)> progress;
  if (!a.quiet) progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  auto points = k::run_quality(*engine, g, progress);

  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const std::string header = fmt::format(
      "TAGC decode quality, measured with the CPU kernels on synthetic gradients (kernels/quality.hpp).\n"
      "command: {}\ndate: {}\n"
      "set=curve: 2 independent ranks, 1bit-or, swept over load (ratio 2 up to load 1.2, load / 0.6 past it), per row count; "
      "set=grid: the policy grid, shards of {} blocks.",
      command, date, a.blocks);
  const std::string csv = k::quality_csv(points, header);
  if (!a.out.empty()) write_file(a.out, csv);

  // Summary: the peeling threshold, and how well the model reproduces the grid.
  k::QualityTable table = k::parse_quality_csv(csv, a.out.empty() ? "(this run)" : a.out);
  fmt::print("{} measurements{}\n", points.size(), a.out.empty() ? "" : " written to " + a.out);
  for (const auto& th : k::peeling_thresholds(table))
    fmt::print("peeling threshold at {:>4} rows: recovered fraction falls through 0.5 at load {:.3f}; "
               ">= 99% up to load {:.3f}\n",
               th.rows, th.half_load, th.full_load);
  if (!g.curve_rows.empty()) {
    double err_rec = 0, err_l2 = 0;
    int count = 0;
    for (const auto& p : table.points) {
      if (p.set != "grid") continue;
      k::QualityQuery q{p.ranks, p.sparsity, p.overlap, p.ratio, p.encoding, double(p.blocks * k::kBlock)};
      auto e = k::estimate_quality(q, table);
      err_rec += std::abs(e.recovered_fraction - p.recovered_fraction);
      err_l2 += std::abs(e.relative_l2_error - p.relative_l2_error);
      ++count;
    }
    if (count)
      fmt::print("model vs the {} grid measurements: mean |recovered error| {:.4f}, mean |rel L2 error| {:.4f}\n", count,
                 err_rec / count, err_l2 / count);
  }
  if (a.out.empty()) fmt::print("(no --out given: nothing written)\n");
  exit_code = 0;
}

}  // namespace

void add_kernels_command(CLI::App& app, int& exit_code) {
  auto* kc = app.add_subcommand("kernels", "TAGC compression kernels: time them, and measure their decode quality");
  kc->require_subcommand(1);

  auto ba = std::make_shared<BenchArgs>();
  auto* bench = kc->add_subcommand("bench", "Time each kernel stage (GB/s and fraction of memory bandwidth)");
  bench->add_option("--backend", ba->backend, "cpu or cuda")->capture_default_str();
  bench->add_option("--sizes", ba->sizes, "Gradient sizes, comma-separated (64KiB,1MiB,...)")->capture_default_str();
  bench->add_option("--repeats", ba->repeats, "Timed runs per point (0: automatic)")->capture_default_str();
  bench->add_option("--warmup", ba->warmup, "Untimed runs first (-1: automatic)")->capture_default_str();
  bench->add_option("--bandwidth", ba->bandwidth, "Reference memory bandwidth, e.g. '4.8 TB/s' (default: device peak)");
  bench->add_option("--topk-histogram", ba->topk_histogram,
                    "CUDA top-k histograms: warp (per-warp, __match_any_sync) or shared (one per block)")
      ->capture_default_str();
  bench->add_option("--json", ba->json, "Also write the JSON profile to FILE");
  bench->add_option("--format", ba->format, "table or json (stdout)")->capture_default_str();
  bench->callback([ba, &app, &exit_code] { run_bench(*ba, program_name(app), exit_code); });

  auto qa = std::make_shared<QualityArgs>();
  auto* quality = kc->add_subcommand("quality", "Measure decode quality (CPU kernels, synthetic gradients)");
  quality->add_option("--ranks", qa->ranks, "Rank counts")->capture_default_str();
  quality->add_option("--sparsity", qa->sparsity, "Per-rank sparsities, in [0.5, 1)")->capture_default_str();
  quality->add_option("--overlap", qa->overlap, "Shared fraction of nonzero positions, 0..1")->capture_default_str();
  quality->add_option("--ratio", qa->ratio, "Compression ratios (> 1)")->capture_default_str();
  quality->add_option("--encodings", qa->encodings, "Index encodings")->capture_default_str();
  quality->add_option("--blocks", qa->blocks, "Shard length in blocks of 1024, for the grid")->capture_default_str();
  quality->add_option("--curve-rows", qa->curve_rows, "Row counts of the peeling curves ('none' to skip)")
      ->capture_default_str();
  quality->add_option("--curve-loads", qa->curve_loads,
                      "Loads of the peeling curves ('default': 0.05..0.4, 0.5..1.2 by 0.05, 1.3..10)")
      ->capture_default_str();
  quality->add_option("--seed", qa->seed, "Random seed")->capture_default_str();
  quality->add_option("--out", qa->out, "Write the quality table (CSV) that estimate_quality() reads");
  quality->add_flag("--quiet", qa->quiet, "No per-measurement lines on stderr");
  quality->callback([qa, &app, &exit_code] { run_quality(*qa, program_name(app), exit_code); });
}

}  // namespace tagcsim::app
