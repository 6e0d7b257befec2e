// The GPU side of `tagcsim calibrate box` and `calibrate check`: measuring a box, and running a
// step's schedule on it. Built from calibrate/box/*.cu and calibrate/check/*.cu when CMake finds
// nvcc and the NCCL and cuBLASLt headers; otherwise from runtime_stub.cpp, whose functions say why
// there is no GPU side. NCCL, cuBLASLt and NVML are loaded when first needed (dlopen), so the
// binary starts, and reports what is missing, on a machine that has only the driver.
#pragma once

#include "calibrate/box_measurements.hpp"
#include "calibrate/box_plan.hpp"
#include "calibrate/check_compare.hpp"
#include "sim/policy.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tagcsim::calibrate::box {

using Progress = std::function<void(const std::string&)>;

// Built with the CUDA measurement code.
bool built();
// GPUs the CUDA runtime sees; 0 with `why` set ("no NVIDIA driver: ...", "built without CUDA ...").
int visible_gpus(std::string& why);
// The name of GPU `index` (before measuring: it names the files).
std::string gpu_name(int index);

// Runs the plan on its GPUs. Writes the TAGC bench JSON into `out_dir` (named in the result's
// tagc_bench). Throws InputError when a required library is missing (NCCL with more than one GPU
// planned), std::runtime_error on a CUDA failure.
BoxMeasurements measure(const BoxPlan& plan, const std::string& out_dir, const Progress& progress);

struct CheckOptions {
  std::vector<int> gpus;   // the box's GPUs to run the step on (size = the scenario's GPUs)
  int warmup_steps = 1;
  int steps = 3;           // measured
  bool emulate_host = true;  // the host spins for the modelled host time of each host task
};

// Runs `predicted.schedule` (built for `setup` under `policy`) on the GPUs, `steps` times after the
// warm-up, and returns rank 0's task times of the median step.
MeasuredRun execute(const sim::StepSetup& setup, const sim::Policy& policy, const sim::StepResult& predicted,
                    const CheckOptions& options, const Progress& progress);

}  // namespace tagcsim::calibrate::box
