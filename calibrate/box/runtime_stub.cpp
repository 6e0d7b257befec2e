// The GPU side when this build has none (no nvcc, or no NCCL/cuBLASLt headers): every entry point
// says why, and the commands turn that into their one-line error (exit 2).
#include "calibrate/box/runtime.hpp"

#include "common/input.hpp"

#ifndef TAGCSIM_BOX_MISSING
#define TAGCSIM_BOX_MISSING "this tagcsim was built without the CUDA measurement code"
#endif

namespace tagcsim::calibrate::box {

bool built() { return false; }

int visible_gpus(std::string& why) {
  why = TAGCSIM_BOX_MISSING;
  return 0;
}

std::string gpu_name(int) { return {}; }

BoxMeasurements measure(const BoxPlan&, const std::string&, const Progress&) {
  throw InputError(std::string("calibrate box: no GPU side: ") + TAGCSIM_BOX_MISSING);
}

MeasuredRun execute(const sim::StepSetup&, const sim::Policy&, const sim::StepResult&, const CheckOptions&,
                    const Progress&) {
  throw InputError(std::string("calibrate check: no GPU side: ") + TAGCSIM_BOX_MISSING);
}

}  // namespace tagcsim::calibrate::box
