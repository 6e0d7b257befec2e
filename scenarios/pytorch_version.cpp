// What a PyTorch build decided for a run (training.pytorch), where a prediction moves with it. Each
// rule names the change in PyTorch that made it; a nightly carries every release before its own
// version, and the date-bounded rules by its build date.
#include "scenarios/pytorch_version.hpp"

#include <fmt/format.h>

#include <regex>

namespace tagcsim::scenarios {
namespace {

// SDPA asked cuDNN's kernel first on compute capability 9.0 and up from PyTorch 2.5's branch
// (cut 2024-09-09, pytorch#135506; pytorch#125343's third landing is in it, its date not pinned
// down: nightlies before the cut are left at the flash default) until pytorch#138522 made cuDNN
// opt-in again (merged 2024-10-22, picked into 2.5.1). Of the releases, 2.5.0 (2024-10-17) alone.
constexpr const char* kCudnnFirstFrom = "2024-09-09";
constexpr const char* kCudnnOptIn = "2024-10-22";
// From 2.11 the wheels carry cuDNN 9.15 or newer, above which check_prefer_cudnn_attention puts
// cuDNN first again on sm90 and sm100 (sdp_utils.cpp; sm103 joined with pytorch#170800 before 2.11's
// branch cut). Our own H200 steps (S63, torch 2.11, cuDNN 9.19) ran it.
constexpr int kCudnnAgainMinor = 11;
// nn.RMSNorm runs one fused kernel each way from 2.9 (pytorch#153666).
constexpr int kFusedRmsNormMinor = 9;

}  // namespace

PytorchVersion parse_pytorch_version(const Input& where) {
  const std::string text = where.as_string();
  // X.Y[.Z], then .devYYYYMMDD (a nightly) or a0 (a source build, NGC's containers: undated), then a
  // local tag (+cu124, +gitd9abf9e).
  static const std::regex form(
      R"((\d+)\.(\d+)(?:\.(\d+))?(?:\.dev(20\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])|(a0))?(?:\+\w+)?)");
  std::smatch m;
  if (!std::regex_match(text, m, form) || m[1] != "2")
    where.fail(fmt::format("expected a PyTorch 2 version as its torch.__version__ prints it: a release (2.5.1, "
                           "2.5.1+cu124), a nightly (2.6.0.dev20241015) or a source build (2.14.0a0+gitd9abf9e); "
                           "got '{}'",
                           text));
  PytorchVersion v;
  v.major = 2;
  v.minor = std::stoi(m[2]);
  v.patch = m[3].matched ? std::stoi(m[3]) : 0;
  if (m[4].matched) v.nightly_date = fmt::format("{}-{}-{}", m[4].str(), m[5].str(), m[6].str());
  v.development = m[4].matched || m[7].matched;
  return v;
}

std::vector<std::string> apply_pytorch_version(const Input& training, sim::Training& t,
                                               const models::TransformerConfig& m, const sim::KernelProfile* gpu) {
  const auto key = training.find("pytorch");
  if (!key) return {};
  const PytorchVersion v = parse_pytorch_version(*key);
  std::vector<std::string> set;
  const auto unset = [&](const char* k) { return !training.has(k); };
  // A nightly is its version's development: it has every release before it, not its own.
  const auto released = [&](int minor) {
    return v.development ? v.at_least(2, minor + 1) : v.at_least(2, minor);
  };

  // SDPA's default backend, where the model calls SDPA and a Hopper or Blackwell GPU could take
  // cuDNN's kernel: causal, no window, no sinks, heads of at most 128 (cuDNN's limit in 2.5).
  const bool sdpa = t.framework == sim::Framework::PyTorch || t.framework == sim::Framework::Torchtitan;
  const bool sm90_up = gpu && (gpu->family == "hopper" || gpu->family == "blackwell");
  const int head_dim = m.head_dim > 0 ? m.head_dim : m.hidden / m.heads;
  const bool cudnn_shape = m.sliding_window == 0 && !m.attention_sinks && m.kv_lora_rank == 0 && head_dim <= 128;
  if (sdpa && sm90_up && cudnn_shape && unset("attention")) {
    const bool window = !v.development ? v.minor == 5 && v.patch == 0
                                       : v.nightly_date >= kCudnnFirstFrom && v.nightly_date < kCudnnOptIn;
    std::string why;
    if (window)
      why = fmt::format("SDPA asked cuDNN first on Hopper and Blackwell in 2.5.0 and the nightlies from 2.5's branch, "
                        "pytorch#135506 {}, to pytorch#138522 {}",
                        kCudnnFirstFrom, kCudnnOptIn);
    else if (released(kCudnnAgainMinor))
      why = "SDPA asks cuDNN first on Hopper and Blackwell from 2.11, whose cuDNN is 9.15 or newer (sdp_utils.cpp)";
    if (!why.empty()) {
      // A profile without cuDNN curves keeps FlashAttention-2's, and says what it stands in for.
      const bool cudnn = gpu->has_attention(models::AttentionKernel::Cudnn);
      if (cudnn) t.impl.attention = models::AttentionKernel::Cudnn;
      set.push_back(cudnn ? fmt::format("attention cudnn ({})", why)
                          : fmt::format("attention flash2 standing in for cuDNN's ({}; kernel profile '{}' has no "
                                        "cuDNN attention measurement)",
                                        why, gpu->name));
    } else {
      t.impl.attention = models::AttentionKernel::Flash2;
      set.push_back(fmt::format("attention flash2 (SDPA's flash kernel first: cuDNN's in 2.5.0, the nightlies from {} "
                                "to {} and from 2.11)",
                                kCudnnFirstFrom, kCudnnOptIn));
    }
  }
  // torchtitan builds its norms from nn.RMSNorm; other code (Hugging Face's LlamaRMSNorm) writes its own.
  if (t.framework == sim::Framework::Torchtitan && m.norm == models::Norm::RMSNorm && unset("rms_norm")) {
    t.impl.fused_rms_norm = released(kFusedRmsNormMinor);
    set.push_back(t.impl.fused_rms_norm ? "rms_norm fused (nn.RMSNorm one kernel each way from 2.9, pytorch#153666)"
                                        : "rms_norm reference (nn.RMSNorm fused from 2.9)");
  }
  return set;
}

}  // namespace tagcsim::scenarios
