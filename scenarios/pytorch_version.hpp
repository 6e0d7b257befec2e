// training.pytorch: the defaults a PyTorch release (or nightly) gave a run, where they move a
// prediction (docs/scenarios.md, "Matching a run's PyTorch and torchtitan").
#pragma once

#include "common/input.hpp"
#include "models/model.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/training.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

// A PyTorch version as published: a release ("2.5", "2.5.1", "2.5.1+cu124"), a nightly
// ("2.6.0.dev20241015+cu124", its build date kept) or a source build ("2.14.0a0+gitd9abf9e", as
// NVIDIA's containers print theirs: undated).
struct PytorchVersion {
  int major = 0, minor = 0, patch = 0;
  bool development = false;  // a nightly or a source build: its version's development, not its release
  std::string nightly_date;  // YYYY-MM-DD for a nightly, "" otherwise
  bool at_least(int maj, int min) const { return major != maj ? major > maj : minor >= min; }
};
// Parses `text`; an InputError at `where` says what was expected.
PytorchVersion parse_pytorch_version(const Input& where);

// Sets what the build decides and the training block does not set itself, for the model and the
// GPU's kernel profile (null: none): SDPA's attention kernel on Hopper and Blackwell, and, under
// torchtitan (nn.RMSNorm), the fused RMSNorm. Returns what it set with the change that decided it;
// nothing without the key. Call before apply_torchtitan_date, whose own choices (torchtitan asking
// SDPA for a kernel itself) then override the build's default.
std::vector<std::string> apply_pytorch_version(const Input& training, sim::Training& t,
                                               const models::TransformerConfig& m, const sim::KernelProfile* gpu);

}  // namespace tagcsim::scenarios
