// The policy tuner: per unit kind, compress or not and with which ratio,
// sparsity and index encoding, for the lowest predicted step time whose
// expected gradient error stays under a bound.
//
// Two stages, so that the search costs a handful of replays:
//   1. Analytic. A unit's reduction cost depends only on its own settings, so
//      every (unit size, policy kind, ratio, sparsity, encoding) is costed once
//      from the tasks build_policy_step makes for that unit alone: its kernels
//      (KernelProfile) plus its collectives (plan_collective().seconds(), no
//      contention). Per policy kind, a multiple-choice knapsack over unit kinds
//      picks the fastest settings whose summed squared error fits the bound.
//   2. Replay. Only a few finalists (the knapsack optimum per policy kind, then
//      greedy variants that leave one more kind uncompressed) and plain FSDP
//      are replayed in SimGrid, which adds what the analytic cost ignores:
//      contention between concurrent collectives and overlap with compute.
//      The fastest replayed candidate under the bound wins.
#pragma once

#include "sim/policy.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tagcsim::sim {

struct TuneOptions {
  double max_grad_error = 0;  // bound on expected_error(...).relative_l2_error (>= 0)
  std::vector<double> ratios = {1.5, 2, 3, 4, 6, 8, 10};
  std::vector<double> sparsities = {0, 0.5, 0.8, 0.9, 0.95, 0.99};
  std::vector<kernels::IndexEncoding> encodings = {std::begin(kernels::kAllEncodings),
                                                   std::end(kernels::kAllEncodings)};
  bool allow_lossy_index = false;  // 1bit-sum is searched only when true
  std::vector<PolicyKind> kinds = {PolicyKind::Tagc, PolicyKind::TagcBatched};
  int finalists = 6;   // compressed candidates replayed at most (fsdp is replayed besides)
  double overlap = 0;  // nonzero overlap across ranks assumed by the quality model
  // A unit decoded with a relative error of 1 or more is no better than one
  // sent as zeros; such settings are never chosen, whatever the bound.
  double max_unit_error = 1;
};

// One unit kind's settings for one policy kind, costed analytically per step
// (all units of the kind, every synchronised micro-batch).
struct KindOption {
  bool compress = false;
  double ratio = 0, sparsity = 0;
  kernels::IndexEncoding index = kernels::IndexEncoding::Bit8Max;
  double seconds = 0;            // kernels + collectives, no contention
  double kernel_s = 0;           // of which compression kernels (compute stream)
  double latency_s = 0;          // of which collective latency (launch + steps)
  int collectives = 0;           // collectives issued, serialised on the reduction stream
  double unit_error = 0;         // decode error of one unit (relative L2)
  double load = 0;               // union nonzeros per sketch counter (the quality model's x axis)
  std::string describe() const;  // "tagc r=4 s=0.9 8bit-max" style, without the policy
};

struct KindDecision {
  models::UnitKind kind = models::UnitKind::Root;
  int units = 0;
  std::int64_t params = 0;
  bool compress = false;
  Policy::KindSettings settings;  // meaningful when compress
  double unit_error = 0;          // when compressed
  double plain_s = 0;             // analytic: plain reduce-scatter of these units per step
  double compressed_s = 0;        // analytic: the chosen settings (or, uncompressed, the fastest compressed)
  std::string reason;             // why it is left uncompressed; empty when compressed
};

// A candidate that was replayed.
struct TuneFinalist {
  std::string label;
  PolicyKind kind = PolicyKind::Fsdp;
  double analytic_s = 0;   // summed analytic reduction cost of all units
  double step_time_s = 0;  // replayed
  double expected_error = 0;
  std::string why;  // how it was chosen for replay
};

struct TuneResult {
  Policy best;  // fsdp when nothing compressed pays
  StepResult best_step, fsdp_step;
  double expected_error = 0;            // of best
  double speedup = 1;                   // fsdp step / best step
  std::vector<KindDecision> decisions;  // one per unit kind present, in first-appearance order
  std::vector<TuneFinalist> finalists;  // every replay, fsdp first
  int replays = 0;
  int candidates_considered = 0;   // (unit kind, policy kind, ratio, sparsity, encoding) settings costed
  int cost_evaluations = 0;        // one-unit schedules built (identical unit sizes share one)
  double combinations = 0;         // whole-model policies the knapsacks chose among
  std::vector<std::string> notes;  // skipped encodings and the like
  double wall_s = 0;
};

// InputError for an invalid bound or option list.
TuneResult tune(const StepSetup& setup, const TuneOptions& options);

}  // namespace tagcsim::sim
