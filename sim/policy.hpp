// Gradient-compression policies, each a change to the FSDP schedule.
//
// A policy decides, per FSDP unit, how its gradient is reduced: plain
// reduce-scatter, or one of the compressed pipelines. A compressed pipeline
// adds kernels (sparsify, index, sketch, decode) to the streams and replaces
// the reduce-scatter by other collectives of other sizes. Nothing here is a
// factor on the reduce-scatter time: SimGrid replays the collectives.
#pragma once

#include "kernels/profile.hpp"
#include "kernels/quality.hpp"
#include "kernels/tagc.hpp"
#include "models/model.hpp"
#include "sim/step.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tagcsim::sim {

enum class PolicyKind {
  Fsdp,         // plain reduce-scatter
  Lhc,          // every unit: count sketch all-reduced (LHC), no sparsification
  Tagc,         // TAGC as published: per destination shard, index all-reduce + sketch reduce
  TagcBatched,  // ours: all shards sketched at once, one index and one sketch reduce-scatter per unit
};
const char* to_string(PolicyKind k);

// Which units a compressing policy compresses.
struct Selection {
  enum class Rule { Tagc, All, MinParams, Kinds } rule = Rule::Tagc;
  std::int64_t min_params = 0;                 // MinParams
  std::vector<models::UnitKind> kinds;         // Kinds
};
bool selected(const Selection& s, const models::FsdpUnit& u);
std::string describe(const Selection& s);

struct Policy {
  std::string label;                           // how it is reported ("tagc", "tagc r=4")
  PolicyKind kind = PolicyKind::Fsdp;
  double ratio = 2;                            // uncompressed counters / sketch counters (> 1)
  double sparsity = 0.8;                       // fraction zeroed by sparsify, in [0, 1)
  kernels::IndexEncoding index = kernels::IndexEncoding::Bit1Sum;
  bool exact_topk = false;                     // sparsify by exact top-k instead of the reference's bisection
  double overlap = 0;                          // overlap of nonzero positions across ranks, for the quality model
  Selection selection;
  std::optional<Dtype> reduce_dtype;           // fsdp: override training.reduce_dtype
  // Its collectives on a process group (NCCL communicator) of their own, concurrent with FSDP's;
  // by default they use the default group, as the TAGC and LHC references do, and queue with FSDP's.
  bool own_process_group = false;
  // Per unit kind overrides (the tuner's output): whether and how units of
  // that kind are compressed, in place of `selection` and the settings above.
  struct KindSettings {
    models::UnitKind kind = models::UnitKind::Block;
    bool compress = true;
    double ratio = 2;
    double sparsity = 0.8;
    kernels::IndexEncoding index = kernels::IndexEncoding::Bit8Max;
  };
  std::vector<KindSettings> by_kind;
};

// How unit `u` is reduced under `p`: nullopt for a plain reduce-scatter, else
// the policy with that unit's compression settings.
std::optional<Policy> unit_policy(const Policy& p, const models::FsdpUnit& u);

// The expected decode quality of a compressed unit's gradient, decoded in
// pieces of `decoded_elements` (a shard; the whole unit under LHC): small
// pieces have few sketch rows and peel worse.
kernels::QualityEstimate unit_quality(const Policy& unit_settings, int ranks, double decoded_elements);
// The piece of unit `u` one rank decodes under `p`: its shard, or the whole unit under LHC.
double decoded_elements(const Policy& p, const StepSetup& setup, const models::FsdpUnit& u);

// Checks the settings against the cluster: ratio > 1, sparsity in [0,1),
// index encodings that overflow at this rank count. Returns warnings (the
// lossy 1-bit SUM index) and throws InputError for impossible settings.
// `decoded_elements`: the smallest piece decoded (0: a large one), for the damage estimate.
std::vector<std::string> check_policy(const Policy& p, int ranks, const std::string& where,
                                      double decoded_elements = 0);

// The kernel timings used by compressing policies: a measured bench JSON for
// the device's family (calibrate/profiles/kernels-cuda-<family>*.json, written
// by kernels/gpu-check.sh) when one exists, else the bandwidth model, labelled
// as such.
kernels::KernelProfile kernel_profile_for(const topologies::DeviceProfile& gpu);

struct GradientError {
  double relative_l2_error = 0;     // of the whole reduced gradient
  double compressed_fraction = 0;   // of the parameters
  std::string basis;
};
GradientError expected_error(const StepSetup& setup, const Policy& policy);

// Builds, replays and summarizes one step under `policy`.
StepResult simulate(const StepSetup& setup, const Policy& policy);

// The schedule alone (tests count its collectives).
Schedule build_policy_step(const StepSetup& setup, const Policy& policy, const kernels::KernelProfile& kp);

}  // namespace tagcsim::sim
