// Predictions against published FSDP throughput (scenarios/validation/, docs/validation.md).
//
// The bounds are the errors measured there, with the training GEMM efficiency fitted by
// least squares on the eager entries whose activation checkpointing tagcsim models exactly
// (scripts/validate-fsdp.sh --fit cluster.gpu.gemm_efficiency --scale-by gemm_size_factor
// --train 'compile=false.*ac=(none|full)$|gpu=h100-500w compile=false'). The fitted value is
// applied here as an override (the presets carry it too, but the 500 W class is not a preset),
// and sim/compute.cpp scales it by the cuBLAS efficiency at the model's hidden size relative
// to 8192-wide GEMMs.
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using namespace tagcsim;

namespace {

const std::string kDir = std::string(TAGCSIM_SOURCE_DIR) + "/scenarios/validation/";

// Fitted training GEMM efficiency at 8192-wide GEMMs, per GPU class (docs/validation.md).
const std::map<std::string, double> kFitted = {{"a100", 0.675}, {"h100", 0.455}, {"h100-500w", 0.37}};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The "# validation: k=v ..." line of a scenario.
std::map<std::string, std::string> tags(const std::string& text) {
  std::map<std::string, std::string> out;
  const auto at = text.find("# validation: ");
  if (at == std::string::npos) return out;
  std::istringstream line(text.substr(at + 14, text.find('\n', at) - at - 14));
  for (std::string kv; line >> kv;)
    if (auto eq = kv.find('='); eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
  return out;
}

struct Check {
  double measured = 0, predicted = 0;
  double error() const { return predicted / measured - 1; }
};

// Runs entry `id` with the fitted GEMM efficiency of its GPU class.
Check run_fitted(const std::string& id) {
  const std::string text = read(kDir + id + ".yaml");
  auto t = tags(text);
  REQUIRE(!t["gpu"].empty());
  const double e = kFitted.at(t["gpu"]);  // sim/compute.cpp scales it by the GEMM width
  const auto s = scenarios::parse_scenario(
      text + "sweep: {cluster.gpu.gemm_efficiency: [" + std::to_string(e) + "]}\n", id + ".yaml");
  const auto r = scenarios::run(s);
  REQUIRE(r.size() == 1);
  return {std::stod(t["measured_tps"]), r[0].step.tokens_per_s_per_gpu};
}

}  // namespace

TEST_CASE("every validation scenario loads and carries its measurement") {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(kDir)) {
    if (f.path().extension() != ".yaml") continue;
    const std::string text = read(f.path().string());
    CAPTURE(f.path().filename().string());
    auto t = tags(text);
    CHECK(std::stod(t["measured_tps"]) > 0);
    CHECK(kFitted.count(t["gpu"]) == 1);
    CHECK_NOTHROW(scenarios::parse_scenario(text, f.path().string()));
    ++n;
  }
  CHECK(n == 30);  // the kind: fsdp entries of published_measurements.yaml
}

TEST_CASE("A100, fitted GEMM efficiency: fit entries within the fit's largest error, 6%") {
  // Llama-2 70B, 64x A100, torchtitan FSDP2, full AC, 2x4096: published 353 tok/s/GPU (measured -0.7%).
  const auto tt70 = run_fitted("fsdp-tt-70b-llama2-a100-64gpu-bs2-full");
  CHECK(std::abs(tt70.error()) < 0.06);
  // Llama-2 7B, 128x A100 at 400 Gb/s per node, fms-fsdp HSDP, eager: published 3700 (measured +6.0%).
  const auto fms7 = run_fitted("fsdp-fms-llama2-7b-a100-128gpu-2403");
  CHECK(std::abs(fms7.error()) < 0.065);
}

TEST_CASE("H100, fitted GEMM efficiency: Llama-2 7B on 96x H100 HSDP") {
  // Eager (fit entry): published 7500 tok/s/GPU, measured +10.5%, the fit's largest H100 error.
  const auto eager = run_fitted("fsdp-fms-llama2-7b-h100-96gpu-2403");
  CHECK(std::abs(eager.error()) < 0.11);
  // torch.compile (held out): published 9600, measured -13.7%. tagcsim charges eager element-wise
  // traffic, so a compiled run must come out slower than measured, by less than the held-out 15%.
  const auto compiled = run_fitted("fsdp-fms-llama2-7b-h100-96gpu-2405");
  CHECK(compiled.error() < 0);
  CHECK(compiled.error() > -0.15);
}
