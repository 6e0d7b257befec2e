// Internal to calibrate/box: the pieces measure() runs, one file each.
#pragma once

#include "calibrate/box/runtime.hpp"

namespace tagcsim::calibrate::box {

BoxInfo box_info(const std::vector<int>& gpus);
// The plan's NCCL sweeps; notes what it skips (no NCCL library).
std::vector<NcclSample> run_nccl(const BoxPlan& plan, std::vector<std::string>& notes, const Progress& progress);
std::string utc_now();

}  // namespace tagcsim::calibrate::box
