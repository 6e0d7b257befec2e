// The process-wide state behind sim/kernel_profile.hpp: the loaded kernel profiles and the fitted
// parameters (the fit file's, and the overrides the validation fits set). Internal to sim/:
// kernel_profile.cpp loads profiles into it, compute.cpp its scaled copies, fitted_parameters.cpp
// keeps the fits and the profiles' fitted scales current.
#pragma once

#include "sim/kernel_profile.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace tagcsim::sim::detail {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<KernelProfile>> profiles;  // by path
  // Copies for a GPU that is not the one measured (compute.cpp): by path, scales and, for a device
  // the profile also serves, that device's name.
  std::map<std::tuple<std::string, double, double, std::string>, std::unique_ptr<KernelProfile>> scaled;
  std::optional<std::map<std::string, FittedParameters>> fitted;   // from the fit file
  std::map<std::string, std::string> what_if;  // from the fit file, read with `fitted`
  std::map<std::string, FittedParameters> overrides;
};
Registry& registry();

// The parameters a profile of this GPU and family runs with: the device's own fit, else its
// family's, else borrowed. The caller holds r.mu.
FittedParameters fitted_locked(Registry& r, const std::string& gpu, const std::string& family);
// The parameters a loaded profile, or its copy for another part it serves, runs with: as above for
// the part, and a part without a fit of its own takes the measured part's before its family's.
FittedParameters profile_fitted_locked(Registry& r, const KernelProfile& p);

}  // namespace tagcsim::sim::detail
