// The fitted parameters (sim/kernel_profile.hpp): calibrate/profiles/fit-training.yaml, written
// by `tagcsim validate --fit --write`, and the overrides the validation fits set in-process; per
// device, per family, and what a family without a fit borrows.
#include "sim/kernel_profile.hpp"
#include "sim/kernel_profile_registry.hpp"

#include "common/input.hpp"
#include "kernels/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <set>
#include <string_view>

namespace tagcsim::sim {
namespace {

using detail::Registry;

constexpr const char* kFitFormat = "tagcsim-training-fit/1";
constexpr const char* kRemoved = "(removed)";  // an override that hides a fit (remove_fitted_parameters)

std::map<std::string, FittedParameters> read_fit_file(std::map<std::string, std::string>& what_if) {
  std::map<std::string, FittedParameters> out;
  const auto path = fit_file_path();
  if (!std::filesystem::exists(path)) return out;
  const Input doc = Input::load_file(path);
  doc.expect_keys({"format", "command", "families", "devices", "what_if"});
  if (doc["format"].as_string() != kFitFormat)
    doc["format"].fail(fmt::format("expected '{}'", kFitFormat));
  auto read = [&](const Input& map, bool devices) {
    for (const auto& name : map.keys()) {
      const Input f = map[name];
      f.expect_keys({"tensor_scale", "memory_scale", "basis", "held_out"});
      FittedParameters p;
      p.tensor_scale = f["tensor_scale"].as_positive();
      p.memory_scale = f["memory_scale"].as_positive();
      p.basis = f["basis"].as_string();
      if (const auto h = f.find("held_out")) p.held_out = h->as_string();
      out[devices ? device_fit_key(name) : name] = p;
    }
  };
  read(doc["families"], false);
  if (const auto devices = doc.find("devices")) read(*devices, true);
  if (const auto w = doc.find("what_if"))
    for (const auto& setting : w->keys()) what_if[setting] = (*w)[setting].as_string();
  return out;
}

// The fit file's parameters, read on first use. The caller holds r.mu.
const std::map<std::string, FittedParameters>& file_fits(Registry& r) {
  if (!r.fitted) r.fitted = read_fit_file(r.what_if);
  return *r.fitted;
}

std::optional<FittedParameters> own_fit(Registry& r, const std::string& key) {
  if (auto it = r.overrides.find(key); it != r.overrides.end()) {
    if (it->second.basis == kRemoved) return std::nullopt;
    return it->second;
  }
  const auto& fits = file_fits(r);
  if (auto it = fits.find(key); it != fits.end()) return it->second;
  return std::nullopt;
}

// NVIDIA's architectures in release order: a family's predecessor is the one before it.
constexpr std::array kArchitectures = {"volta", "turing", "ampere", "ada", "hopper", "blackwell"};

int architecture_rank(const std::string& family) {
  const auto it = std::find(kArchitectures.begin(), kArchitectures.end(), family);
  return it == kArchitectures.end() ? -1 : int(it - kArchitectures.begin());
}

// A family without a fit of its own takes its nearest fitted predecessor's scales: what the tensor
// scale holds (clocks sustained under a training load against a microbenchmark's, the library
// generation) carries from one architecture to the next, and Hopper and
// Blackwell both run dense tensor work at their power limit where Ampere runs near its clocks.
// With no fitted predecessor (or a family not in the list), the geometric means of the fitted
// families' scales. Its basis stays empty: not fitted.
FittedParameters family_fitted_locked(Registry& r, const std::string& family) {
  if (auto own = own_fit(r, family)) return *own;
  std::set<std::string> families;
  for (const auto& [name, p] : file_fits(r)) families.insert(name);
  for (const auto& [name, p] : r.overrides) families.insert(name);
  double log_tensor = 0, log_memory = 0;
  int n = 0, predecessor_rank = -1;
  std::optional<FittedParameters> predecessor;
  std::string predecessor_name;
  const int rank = architecture_rank(family);
  for (const auto& name : families) {
    if (is_device_fit_key(name)) continue;
    const auto f = own_fit(r, name);
    if (!f || f->basis.empty() || name == family) continue;
    log_tensor += std::log(f->tensor_scale), log_memory += std::log(f->memory_scale), ++n;
    if (const int k = architecture_rank(name); rank >= 0 && k >= 0 && k < rank && k > predecessor_rank)
      predecessor_rank = k, predecessor = f, predecessor_name = name;
  }
  if (!n) return FittedParameters{1, 1, "", "none: the profile's rates"};
  if (predecessor)
    return FittedParameters{predecessor->tensor_scale, predecessor->memory_scale, "",
                            predecessor_name + "'s, its predecessor's"};
  return FittedParameters{std::exp(log_tensor / n), std::exp(log_memory / n), "",
                          "the fitted families' geometric mean"};
}

}  // namespace

namespace detail {

Registry& registry() {
  static Registry r;
  return r;
}

// A device fitted on its own rows takes its own tensor scale; the memory scale is the one shared.
FittedParameters fitted_locked(Registry& r, const std::string& gpu, const std::string& family) {
  if (auto own = own_fit(r, device_fit_key(gpu))) return *own;
  return family_fitted_locked(r, family);
}

// A part the profile also serves (the same die: H800 on H100's, GH200 on H200's, GB200 on B200's)
// runs, without rows of its own, at the fit of the part the profile measured: a tensor scale is what
// PyTorch training sustains on that die against its profile, and the parts' clocks and power differ
// by their datasheet peaks, which the scaled copy already applies. The one measurement of two such
// parts in one harness agrees: mamf-finder's best bf16 matmul, GB200 1,822 against B200 1,745
// TFLOP/s (1.044x; K24), where B200's fit gives GB200 1.111x and Hopper's, borrowed before, 1.48x.
// GB200 has rows of its own since stop 53 (S88, S90): its own fit, 1.046x the B200's rate.
FittedParameters profile_fitted_locked(Registry& r, const KernelProfile& p) {
  if (auto own = own_fit(r, device_fit_key(p.fit_device()))) return *own;
  if (p.fit_device() != p.gpu)
    if (auto measured = own_fit(r, device_fit_key(p.gpu)))
      return FittedParameters{measured->tensor_scale, measured->memory_scale, "",
                              fmt::format("{}, whose kernel profile it shares", p.gpu),
                              measured->held_out.empty() ? "" : fmt::format("{}'s {}", p.gpu, measured->held_out)};
  return family_fitted_locked(r, p.family);
}

}  // namespace detail

using detail::fitted_locked;
using detail::registry;

// The profiles already loaded take the parameters now in force. The caller holds r.mu.
static void refresh_profiles(detail::Registry& r) {
  for (auto& [path, prof] : r.profiles) prof->fitted = profile_fitted_locked(r, *prof);
  for (auto& [key, prof] : r.scaled) prof->fitted = profile_fitted_locked(r, *prof);
}

std::string fit_file_path() { return kernels::data_dir() + "/fit-training.yaml"; }

std::vector<std::pair<std::string, std::string>> what_if_held_out(const std::string& setting) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  file_fits(r);  // the what-if lines come with the file
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, line] : r.what_if)
    if (name == setting || name.rfind(setting + " ", 0) == 0) out.emplace_back(name, line);
  return out;
}

FittedParameters fitted_parameters(const std::string& family) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  return family_fitted_locked(r, family);
}

FittedParameters fitted_parameters(const std::string& gpu, const std::string& family) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  return fitted_locked(r, gpu, family);
}

constexpr std::string_view kDevicePrefix = "device:";

std::string device_fit_key(const std::string& gpu) { return std::string(kDevicePrefix) + gpu; }
bool is_device_fit_key(const std::string& key) { return key.rfind(kDevicePrefix, 0) == 0; }
std::string fit_key_label(const std::string& key) {
  return is_device_fit_key(key) ? key.substr(kDevicePrefix.size()) : key;
}

bool has_device_fit(const std::string& gpu) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  return own_fit(r, device_fit_key(gpu)).has_value();
}

void override_fitted_parameters(const std::string& key, const FittedParameters& p) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.overrides[key] = p;
  refresh_profiles(r);  // unfitted ones follow
}

void remove_fitted_parameters(const std::string& key) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.overrides[key] = FittedParameters{1, 1, kRemoved, ""};
  refresh_profiles(r);
}

void clear_fitted_overrides() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.overrides.clear();
  refresh_profiles(r);
}

}  // namespace tagcsim::sim
