// Synthetic box measurements with known answers, and the relative comparison their seconds and
// bytes/s need (shared by test_calibrate_box.cpp, test_calibrate_box_files.cpp and
// test_calibrate_check.cpp): a fit is only checked against a truth it was made from.
#pragma once

#include "calibrate/box_measurements.hpp"
#include "sim/collective.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace tagcsim::test {

// Deterministic noise in [-amp, amp].
struct Noise {
  std::uint64_t s = 12345;
  double operator()(double amp) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return amp * (double((s >> 11) & 0xfffff) / double(0xfffff) * 2 - 1);
  }
};

// A relative comparison to 1e-6 (every test's Approx is relative: tests/approx_relative.hpp).
inline doctest::Approx rel(double v, double epsilon = 1e-6) { return doctest::Approx(v).epsilon(epsilon); }

// A box of `n` H100s on an NVSwitch board, as the CUDA side would describe it.
inline calibrate::BoxMeasurements h100_box(int n) {
  calibrate::BoxMeasurements m;
  m.command = "tagcsim calibrate box (synthetic)";
  m.box.driver = "580.159.03";
  m.box.cuda_driver = "13.0";
  m.box.cuda_runtime = "13.0";
  m.box.nccl = "2.28.9";
  m.box.cublaslt = "13.0.0";
  m.box.cudnn = "9.19.0";
  m.box.host = "synthetic";
  m.box.date = "2026-01-01T00:00:00Z";
  for (int i = 0; i < n; ++i)
    m.box.gpus.push_back({i, "NVIDIA H100 80GB HBM3", 90, 132, 85e9, 1980, 2619, 5120, fmt::format("0000:{:02x}:00.0", i)});
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) m.box.links.push_back({a, b, true, 18, 0});
  return m;
}

// NCCL times from the collective model itself at known parameters, with +-3% noise: the
// collectives over all GPUs and over GPUs 0-1, every GPU's kernels launched by one thread (as the
// box runs them).
inline void add_nccl(calibrate::BoxMeasurements& m, const topologies::Cluster& truth, Noise& noise) {
  const int n = int(m.box.gpus.size());
  std::vector<std::vector<int>> groups = {{}, {0, 1}};
  for (int i = 0; i < n; ++i) groups[0].push_back(i);
  for (const auto& g : groups)
    for (const char* op : {"all_gather", "reduce_scatter", "all_reduce"})
      for (double s = 8; s <= 2.2e9; s *= 4) {
        auto c = truth;
        c.gpus_per_node = int(g.size());
        const double t = sim::plan_collective(c, sim::parse_collective_op(op), s, sim::whole_cluster(c),
                                              sim::PlanOptions{.gpus_per_process = int(g.size())})
                             .seconds();
        m.nccl.push_back({op, g, s, t * (1 + noise(0.03)), t, 20, 0});
      }
}

}  // namespace tagcsim::test
