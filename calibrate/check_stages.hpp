// The TAGC kernels behind each compression-kernel task of a policy's schedule: which stages, on how
// many elements, how often. sim/policy.cpp times these tasks as sums of kernels/profile.hpp stage
// times; `calibrate check` runs the same stages for real (on the compute stream of each GPU).
// Tasks are recognised by the names sim/policy.cpp gives them; a test checks that every
// compression-kernel task of every compressing policy is recognised, so a rename there fails it.
#pragma once

#include "kernels/tagc.hpp"
#include "sim/policy.hpp"

#include <memory>
#include <vector>

namespace tagcsim::calibrate {

struct StageCall {
  enum class Kind { Sparsify, IndexCreate, IndexRead, Compress, CompressBatched, Decode } kind = Kind::Sparsify;
  double elements = 0;  // per call (CompressBatched: all shards together)
  int shards = 1;       // CompressBatched
  int repeat = 1;
};
const char* to_string(StageCall::Kind k);

// Empty when `task` is not a compression-kernel task this file knows.
std::vector<StageCall> compression_stages(const sim::StepSetup& setup, const sim::Policy& policy, const sim::Task& task);

// Engine memory for the largest unit's stages (grad, residual, values, index, sketch, mapping, state).
class StageBuffers {
 public:
  StageBuffers(kernels::Engine& e, std::size_t max_elements, int shards);
  kernels::Buffer<float> grad, residual, values, decoded, sketch;
  kernels::Buffer<std::uint8_t> index, state;
  kernels::Buffer<std::uint32_t> mapping;
  std::size_t capacity = 0;
};

// Enqueues the task's stages on the engine; false when the task is not recognised.
bool run_compression_task(kernels::Engine& e, StageBuffers& b, const sim::StepSetup& setup, const sim::Policy& policy,
                          const sim::Task& task);

}  // namespace tagcsim::calibrate
