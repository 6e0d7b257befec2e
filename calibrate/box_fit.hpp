// From a box's measurements to the model's parameters, and the files that carry them.
//
//   NCCL: every sample becomes a calibrate::Point (one node, ranks = the GPUs it ran on) and the
//     nccl-tests fit (calibrate/fit.hpp) fits launch and per-step latency and the intra-node
//     efficiency against a base cluster built for this box (its GPU, NVLink generation or PCIe).
//   Compute: the GPU's GEMM efficiency, fitted so that the simulator's roofline
//     (sim/compute.hpp) reproduces the measured GEMM and attention time of the scenario's units
//     (without a scenario: the large square bf16 GEMMs); the memory efficiency and the launch floor
//     from t = floor + bytes / bandwidth over the streaming kernels.
// Each fit reports its residuals; nothing is fitted per row.
#pragma once

#include "calibrate/box_measurements.hpp"
#include "calibrate/box_plan.hpp"
#include "calibrate/fit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tagcsim::calibrate {

// t = intercept + x / rate, least squares on the relative error (each point weighs the same
// whatever its size). Fails (points < 2) with an InputError naming `what`.
struct LatencyBandwidthFit {
  double intercept_s = 0;
  double rate = 0;           // x per second
  double mean_abs_error = 0; // over the points, relative
  double max_abs_error = 0;
  int points = 0;
};
LatencyBandwidthFit fit_latency_bandwidth(const std::vector<double>& x, const std::vector<double>& t,
                                          const std::string& what);

// The device preset for a GPU name ("NVIDIA H200" -> "h200-sxm"), "" when none fits.
std::string device_preset_for(const std::string& gpu_name, double memory_bytes);
// The box as a one-node cluster before fitting: the GPU (a preset when one matches, else its peaks
// computed from SMs and clock), NVLink (generation by compute capability) or PCIe, NCCL latencies
// to start from.
topologies::Cluster box_base_cluster(const BoxMeasurements& m, const std::vector<int>& gpus);

std::vector<Point> nccl_points(const BoxMeasurements& m);

struct DeviceFit {
  double gemm_efficiency = 0;       // fitted (see above); 0 when no GEMM was measured
  std::string gemm_basis;
  double memory_efficiency = 0;     // stream rate / datasheet bandwidth
  LatencyBandwidthFit memory;       // t = floor + bytes / stream rate, over copy, scale, add
  std::string memory_note;          // "at bound" and such
  double attention_vs_gemm = 0;     // measured attention rate / measured GEMM rate at the scenario's shapes
};

struct BoxFit {
  BoxMeasurements measured;
  std::vector<int> gpus;            // the box's GPUs the NCCL samples ran over (all of them by default)
  topologies::Cluster base;         // before fitting
  topologies::Cluster cluster;      // after: what the cluster file holds
  std::optional<FitResult> nccl;    // absent when no sample spans two GPUs
  std::string nccl_skipped;         // why not
  DeviceFit device;
  std::optional<ScenarioShapes> scenario;
  std::vector<std::string> notes;
};

// InputError for a sample with wrong results (as nccl-tests' #wrong), or measurements that hold
// nothing to fit.
BoxFit fit_box(const BoxMeasurements& m, const std::optional<ScenarioShapes>& scenario = std::nullopt);

// The files (box_profile_writer.cpp, box_cluster_writer.cpp, box_report.cpp).
std::string device_profile_yaml(const BoxFit& f);  // format tagcsim-device-profile/1 (compute-fidelity)
std::string cluster_yaml(const BoxFit& f);         // `cluster:` map, loads through topologies::load_cluster
std::string box_report(const BoxFit& f);

// Writes the plan's files under `dir` (the TAGC bench JSON is written by the measuring side).
// InputError "--out: cannot write ..." when the folder cannot be written.
void write_box_files(const BoxFit& f, const BoxPlan& plan, const std::string& dir);
// Fails early, before any GPU work: creates `dir` if needed and writes a probe file.
void check_writable_dir(const std::string& dir, const std::string& flag);

}  // namespace tagcsim::calibrate
