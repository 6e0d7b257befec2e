// GPUs of one job that do not all run at the same speed.
//
// FSDP is synchronous: every all-gather and reduce-scatter needs every GPU's shard, and the step
// ends with the optimizer on every shard, so the job moves at the pace of its slowest GPU. Identical
// parts differ: Sinha et al., "Not All GPUs Are Created Equal" (SC'22, arXiv 2208.11035), measured
// an average performance variation of 8% (up to 22%) across the GPUs of one cluster running the
// same benchmark, from manufacturing variability and power management, with outliers up to 1.5x
// slower than the median GPU. A scenario can ask what that costs (docs/scenarios.md, stragglers):
//   cluster: {stragglers: {spread: 0.02}}   # speeds spread with a standard deviation of 2%
//   cluster: {stragglers: {slowest: 0.9}}   # one GPU runs at 0.9 of the others' speed
// The slowest GPU is taken as slow for the whole step (a persistent difference, not jitter), and
// its kernels all run at its speed; the collectives' links do not change.
#pragma once

#include "common/input.hpp"

namespace tagcsim::topologies {

struct Stragglers {
  double spread = 0;   // GPU-to-GPU spread of sustained speed, one standard deviation; 0: none
  double slowest = 0;  // the slowest GPU's speed relative to nominal, in (0, 1]; 0: not given
  bool any() const { return spread > 0 || slowest > 0; }
};

// The expected largest of n independent standard normal deviates: 0 for n = 1, 1/sqrt(pi) for 2,
// about 3.04 for 512 and 3.97 for 16,384. Deterministic (a fixed quadrature).
double expected_max_of_normals(int n);

// The slowest of `gpus` GPUs, as a fraction of nominal speed: `slowest` when given, else
// 1 - spread * expected_max_of_normals(gpus) (the expected slowest of speeds spread normally), else 1.
double slowest_gpu_speed(const Stragglers& s, int gpus);

// `stragglers:` in a cluster: {spread: 0.02} or {slowest: 0.9} (either, not both).
Stragglers load_stragglers(const Input& in);

}  // namespace tagcsim::topologies
