// The hand-sized device profile the compute tests time kernels with, and the helpers around it
// (shared by test_compute.cpp and test_float8.cpp).
#pragma once

#include "common/input.hpp"
#include "sim/kernel_profile.hpp"

#include <doctest/doctest.h>

#include <string>

namespace tagcsim::test {

// A profile small enough to compute by hand: 4 SMs, 128 x 128 tiles, no k overhead, so a GEMM
// whose m and n are multiples of 128 models at exactly 2mnk / peak per wave-filled tile set.
// Peak 400 TFLOP/s; 4096^3 measured at 100 TFLOP/s and 8192^3 at 200 (corrections 0.25, 0.5).
// Memory: 1 MB in 0.1 us (10 TB/s), 1 GB in 10 us (100 TB/s, so that GEMMs are compute-bound);
// kernels take at least 2 us.
inline std::string toy_profile(const std::string& extra_gemm = "", const std::string& curve_points =
                        "{seq: 1024, tflops: 100, source: a}, {seq: 4096, tflops: 200, source: b}") {
  return "format: tagcsim-device-profile/1\n"
         "name: toy\n"
         "gpu: TOY\n"
         "family: toyfamily\n"
         "metadata: {gpu_name: toy, sms: 4, clocks: c, driver: d, cuda: c, cublas: c, cudnn: c, measured_by: hand}\n"
         "peak: {bf16: 400 TFLOP/s, tf32: 200 TFLOP/s, fp32: 50 TFLOP/s, source: hand}\n"
         "gemm:\n"
         "  tiles: [[128, 128]]\n"
         "  max_split_k: 1\n"
         "  tiles_source: hand\n"
         "  k_overhead: 0\n"
         "  k_overhead_source: hand\n"
         "  points:\n"
         "    - {m: 4096, n: 4096, k: 4096, dtype: bf16, tflops: 100, source: p1}\n"
         "    - {m: 8192, n: 8192, k: 8192, dtype: bf16, tflops: 200, source: p2}\n" +
         extra_gemm +
         "attention:\n"
         "  bwd_fwd_rate_ratio: 0.5\n"
         "  bwd_fwd_source: hand\n"
         "  curves:\n"
         "    - {kernel: flash2, direction: fwd+bwd, causal: true, head_dim: 128, points: [" + curve_points + "]}\n"
         "memory:\n"
         "  points:\n"
         "    - {bytes: 1000000, GBps: 10000, source: m1}\n"
         "    - {bytes: 1000000000, GBps: 100000, source: m2}\n"
         "launch: {min_kernel_seconds: 2 us, source: l}\n"
         "host: {issue_seconds: 10 us, hook_seconds: 0 us, source: h}\n";
}

inline sim::KernelProfile toy() { return sim::parse_kernel_profile(toy_profile(), "toy.yaml"); }

inline std::string error_of(const std::string& text) {
  try {
    sim::parse_kernel_profile(text, "bad.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace tagcsim::test
