// Entry points of the CUDA back end (compiled only when nvcc is present).
#pragma once

#include "kernels/tagc.hpp"

#include <memory>
#include <string>

namespace tagcsim::kernels::cuda {
// "" when a CUDA device can be used, else the reason (never throws).
std::string device_problem();
// BackendUnavailable without a usable device.
std::unique_ptr<Engine> make_engine(const EngineOptions& options);
// Streams, device and pinned allocations held by CUDA engines in this
// process (the fault-injection tests check it returns to where it was).
long live_resources();
}  // namespace tagcsim::kernels::cuda
