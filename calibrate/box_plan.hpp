// What `tagcsim calibrate box` measures, decided before any GPU is touched: the NCCL sweeps, the
// GEMM and attention shapes (the scenario's and a standard grid around them), the memory-bound
// sweeps, the TAGC bench sizes and the files it writes. `--dry-run` prints this plan; the CUDA
// side (calibrate/box/) runs it as given.
#pragma once

#include "calibrate/unit_work.hpp"
#include "models/model.hpp"
#include "sim/training.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tagcsim::calibrate {

// The part of a scenario the box measures for (the app layer loads the scenario).
struct ScenarioShapes {
  std::string name;  // scenario file
  models::TransformerConfig model;
  std::vector<models::FsdpUnit> units;
  sim::Training training;
};

struct BoxPlanOptions {
  std::vector<int> gpus;       // local GPU indices to use; empty: all `visible` GPUs
  int visible = 0;             // GPUs the runtime sees (0 when none: the dry run assumes `assumed`)
  int assumed = 8;             // GPUs a dry run plans for when none is visible and --gpus is not given
  std::optional<ScenarioShapes> scenario;
  bool quick = false;
  std::string out_dir = "calibration";
  std::string gpu_name;        // names the files (device-<gpu>.yaml); "" before the GPU is known
};

struct NcclSweep {
  std::string op;            // all_gather, reduce_scatter, all_reduce, reduce, broadcast
  std::vector<int> ranks;    // local GPU indices
  std::vector<double> sizes; // bytes (nccl-tests "size")
  std::string why;           // "all GPUs", "pair: topology", ...
};

struct GemmPlan {
  models::Kernel shape;  // a GEMM: m, n, k
  std::string dtype;   // bf16, fp16, tf32, fp8
  std::string origin;  // "scenario: ...", "grid: ..."
};

struct AttentionPlan {
  double batch_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  std::string origin;
};

struct BoxPlan {
  std::vector<int> gpus;
  bool gpus_assumed = false;  // dry run without a visible GPU
  bool quick = false;
  int warmup = 5, iterations = 20;  // per timed point
  std::vector<NcclSweep> nccl;
  std::vector<GemmPlan> gemms;
  std::vector<AttentionPlan> attention;  // forward and backward each
  std::string attention_kernel;          // what runs them, and why (see calibrate/box/attention.cu)
  std::vector<std::string> memory_kernels;  // copy, scale, add, norm
  std::vector<double> memory_sizes;         // bytes read + written
  std::vector<double> tagc_sizes;           // gradient bytes for the TAGC kernel bench
  std::string out_dir;
  std::string scenario;                     // scenario file, "" without
  struct File {
    std::string name, what;
  };
  std::vector<File> files;  // written under out_dir
  double estimated_seconds = 0;  // a rough budget (the plan sizes itself to stay under it)
};

// InputError for a GPU index out of range (naming the visible GPUs) or a repeated index.
BoxPlan make_box_plan(const BoxPlanOptions& o);
// The dry run's text: sizes, shapes, files.
std::string plan_text(const BoxPlan& p);

// "1 KiB", "256 MiB": how sizes are shown.
std::string bytes_text(double bytes);

}  // namespace tagcsim::calibrate
