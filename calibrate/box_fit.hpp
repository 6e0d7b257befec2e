// From a box's measurements to the model's parameters, and the files that carry them.
//
//   NCCL: every sample becomes a calibrate::Point (one node, ranks = the GPUs it ran on, all of
//     them launched by one thread as nccl-tests -g does) on a base cluster built for this box: the
//     DGX preset of its generation with the box's GPU and link (NVLink3/4 by generation, NVLS on
//     an NVSwitch board, or PCIe). calibrate::fit (Levenberg-Marquardt) fits what one box
//     determines: the host's launch cost per GPU and per channel, the NVLink (or PCIe) ring
//     efficiency of its generation, the NVLS efficiency where the box has NVLS. NCCL's pipeline
//     depths stay at the presets' values (fitted to every published table); launch latency and
//     the NVLS chunk overhead stay held as in every fit (calibrate/fit.hpp); the NICs and their
//     transport are not seen by one node.
//   Compute: the device kernel profile holds the measured kernels themselves (the simulator
//     interpolates them); for the datasheet roofline, the GPU's GEMM efficiency is fitted so that
//     the roofline reproduces the measured GEMM and attention time of the scenario's units
//     (without a scenario: the large square bf16 GEMMs), and the memory efficiency and launch
//     floor come from t = floor + bytes / bandwidth over the streaming kernels.
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
// The box as a one-node cluster before fitting: the DGX preset of its generation (NICs, transport,
// rails, fabric, NCCL's costs) with the box's GPU (a preset when one matches, else its peaks
// computed from SMs and clock; its compute capability as measured) and link (NVLink by
// generation, NVLS on NVSwitch, or PCIe). gpu.profile is the shipped profile of the preset GPU,
// if any.
topologies::Cluster box_base_cluster(const BoxMeasurements& m, const std::vector<int>& gpus);

// The NCCL samples as fit points; InputError for a sample with wrong results.
std::vector<Point> nccl_points(const BoxMeasurements& m);

struct DeviceFit {
  double gemm_efficiency = 0;       // fitted (see above); 0 when no GEMM was measured
  std::string gemm_basis;
  double memory_efficiency = 0;     // stream rate / datasheet bandwidth
  LatencyBandwidthFit memory;       // t = floor + bytes / stream rate, over copy, scale, add
  std::string memory_note;          // "at bound" and such
  double attention_vs_gemm = 0;     // measured attention rate / measured GEMM rate at the scenario's shapes
  // Of an SM, what one spinning block (an NCCL channel) takes from a GEMM beside it: the mean over
  // the samples of (1 - alone / beside) x SMs / blocks, in [0, 1]; 0 when not measured.
  double nccl_block_share = 0;
  std::string nccl_block_basis;
};
// The block share of one sample (see DeviceFit), clamped to [0, 1].
double block_share(const SmHoldSample& s, int sms);

struct BoxFit {
  BoxMeasurements measured;
  std::vector<int> gpus;            // the box's GPUs the NCCL samples ran over (all of them by default)
  topologies::Cluster base;         // before fitting
  topologies::Cluster cluster;      // after: what the cluster file holds
  std::optional<FitResult> nccl;    // absent when no sample spans two GPUs
  std::string nccl_skipped;         // why not
  // Each collective and GPU count ("all_gather over 8 GPUs", its points' table) predicted by a fit to
  // the box's other NCCL samples: what the fit does on a collective it was not given. Empty with one
  // such group; `held_out_skipped` says why when a fold cannot be fitted.
  std::vector<PointFit> nccl_held_out;
  std::string held_out_skipped;
  DeviceFit device;
  std::optional<ScenarioShapes> scenario;
  std::vector<std::string> notes;
};

// InputError for a sample with wrong results (as nccl-tests' #wrong), or measurements that hold
// nothing to fit.
BoxFit fit_box(const BoxMeasurements& m, const std::optional<ScenarioShapes>& scenario = std::nullopt);

// The files (box_profile_writer.cpp, box_cluster_writer.cpp, box_report.cpp).
// The device kernel profile (format tagcsim-device-profile/1, read by sim/kernel_profile.hpp).
std::string device_profile_yaml(const BoxFit& f);
// Whether the box measured what a device profile needs (a 16-bit GEMM and a memory sweep).
bool has_device_profile(const BoxFit& f);
// The cluster file: `cluster:` as topologies::cluster_yaml writes it, with the fits in comments
// above. Its gpu.profile names `profile_file` (beside it) when given, else the datasheet roofline.
std::string box_cluster_yaml(const BoxFit& f, const std::string& profile_file);
std::string box_report(const BoxFit& f);
// The dense datasheet rate of a measured GEMM's dtype (bf16, fp16, tf32, fp8). Float8: twice bf16,
// as every float8 datasheet rate is (Ada, Hopper, Blackwell).
double gemm_peak_flops(const topologies::DeviceProfile& gpu, const std::string& dtype);

// Writes the plan's files under `dir` (the TAGC bench JSON is written by the measuring side).
// InputError "--out: cannot write ..." when the folder cannot be written.
void write_box_files(const BoxFit& f, const BoxPlan& plan, const std::string& dir);
// Fails early, before any GPU work: creates `dir` if needed and writes a probe file.
void check_writable_dir(const std::string& dir, const std::string& flag);

}  // namespace tagcsim::calibrate
