// Entry points of the CUDA back end (compiled only when nvcc is present).
#pragma once

#include "kernels/tagc.hpp"

#include <memory>
#include <string>

namespace tagcsim::kernels::cuda {
// "" when a CUDA device can be used, else the reason (never throws).
std::string device_problem();
// BackendUnavailable without a usable device.
std::unique_ptr<Engine> make_engine();
}  // namespace tagcsim::kernels::cuda
