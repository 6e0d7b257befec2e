// `tagcsim kernels bench`: times each stage on one back end for a range of
// gradient sizes; the JSON it writes is what load_profile() reads.
#pragma once

#include "kernels/profile.hpp"
#include "kernels/tagc.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tagcsim::kernels {

struct BenchOptions {
  Backend backend = Backend::Cpu;
  std::vector<double> sizes_bytes = {65536.0, 1048576.0, 16777216.0, 268435456.0, 1073741824.0};
  int repeats = 0;         // timed runs per point; 0: CUDA 25, CPU as many as fit in ~0.5 s (>= 1)
  int warmup = -1;         // untimed runs first; -1: CUDA 3, CPU 1 (none where one run takes > 0.25 s)
  double bandwidth = 0;    // bytes/s the fractions refer to; 0: the device's peak (CUDA), measured copy (CPU)
  TopkHistogram topk_histogram = TopkHistogram::Warp;  // CUDA top-k histograms (sparsify_topk); CPU: no effect
  std::string command;     // recorded in the JSON
  std::function<void(const std::string&)> progress;  // optional: one line per finished point
};

struct BenchPoint {
  Stage stage;
  std::optional<IndexEncoding> encoding;  // index stages
  double elements = 0, bytes = 0;         // gradient size
  double seconds = 0, seconds_min = 0;    // median and fastest run
  int runs = 0;
  double gbps = 0;                         // stage_cost() bytes / seconds / 1e9
  double bandwidth_fraction = 0;           // of memory_bandwidth
};

struct BenchReport {
  std::string device, backend, command, date;
  std::string topk_histogram;          // "warp" or "shared" (CUDA); "-" on the CPU
  double memory_bandwidth = 0;         // reference for the fractions
  std::string memory_bandwidth_basis;  // where it came from
  double copy_bandwidth = 0;           // measured device-to-device copy (read + write bytes / s)
  std::vector<BenchPoint> points;
};

// The operating point every size is measured at (see profile.hpp): 80% per-rank
// sparsity, union density 0.36, ratio 2, batched over 8 shards, decode at load 0.72.
BenchReport run_bench(const BenchOptions& options);
std::string bench_json(const BenchReport& report);
std::string bench_table(const BenchReport& report);

}  // namespace tagcsim::kernels
