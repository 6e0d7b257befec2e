// training.pytorch: a run's torch.__version__ decides what PyTorch's defaults gave it
// (scenarios/pytorch_version.cpp): SDPA's kernel on Hopper and Blackwell, and nn.RMSNorm's fused
// kernels under torchtitan. A key the scenario sets itself wins, and torchtitan's own choices win
// over PyTorch's defaults.
#include "common/input.hpp"
#include "scenarios/pytorch_version.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using doctest::Contains;
using models::AttentionKernel;

namespace {

scenarios::Point point(const std::string& training, const std::string& cluster = "dgx-h100-ib400",
                       const std::string& model = "llama3.1-8b", const std::string& framework = "pytorch") {
  return scenarios::parse_scenario("model: " + model + "\ncluster: {preset: " + cluster + ", nodes: 1}\ntraining:\n" +
                                       "  framework: " + framework + "\n" + training + "policies: [fsdp]\n",
                                   "t.yaml")
      .points.at(0);
}

AttentionKernel attention(const std::string& version, const std::string& cluster = "dgx-h100-ib400") {
  return point("  pytorch: \"" + version + "\"\n", cluster).setup.training.impl.attention;
}

}  // namespace

TEST_CASE("a PyTorch version parses as torch.__version__ prints it: release or nightly with its build date") {
  const Input release = Input::load_string("pytorch: 2.5.1+cu124\n", "v.yaml")["pytorch"];
  auto v = scenarios::parse_pytorch_version(release);
  CHECK(v.minor == 5);
  CHECK(v.patch == 1);
  CHECK(v.nightly_date.empty());
  v = scenarios::parse_pytorch_version(Input::load_string("pytorch: 2.6.0.dev20241015+cu124\n", "v.yaml")["pytorch"]);
  CHECK(v.minor == 6);
  CHECK(v.nightly_date == "2024-10-15");
  v = scenarios::parse_pytorch_version(Input::load_string("pytorch: \"2.11\"\n", "v.yaml")["pytorch"]);
  CHECK(v.minor == 11);
  CHECK(v.at_least(2, 11));
  CHECK_FALSE(v.at_least(2, 12));
  v = scenarios::parse_pytorch_version(Input::load_string("pytorch: 2.14.0a0+gitd9abf9e\n", "v.yaml")["pytorch"]);
  CHECK(v.minor == 14);
  CHECK(v.development);
  CHECK(v.nightly_date.empty());
  for (const char* bad : {"1.13.1", "2.x", "2.6.0.dev20241315", "2.5.0b1", "latest"})
    CHECK_THROWS_WITH_AS(point(std::string("  pytorch: \"") + bad + "\"\n"),
                         Contains("t.yaml:5: training.pytorch: expected a PyTorch 2 version"), InputError);
}

TEST_CASE("SDPA's kernel on H100: cuDNN in 2.5.0 and the nightlies of 2.5's branch to the opt-in and from 2.11") {
  CHECK(attention("2.5.0") == AttentionKernel::Cudnn);
  CHECK(attention("2.5.1") == AttentionKernel::Flash2);  // pytorch#138522, picked into 2.5.1
  CHECK(attention("2.4.1") == AttentionKernel::Flash2);
  CHECK(attention("2.10.0") == AttentionKernel::Flash2);
  CHECK(attention("2.11.0+cu130") == AttentionKernel::Cudnn);
  // Nightlies by their build date: from 2.5's branch cut (2024-09-09) to the opt-in (2024-10-22).
  CHECK(attention("2.5.0.dev20240906") == AttentionKernel::Flash2);
  CHECK(attention("2.6.0.dev20240909") == AttentionKernel::Cudnn);
  CHECK(attention("2.6.0.dev20241021") == AttentionKernel::Cudnn);
  CHECK(attention("2.6.0.dev20241022") == AttentionKernel::Flash2);
  // A nightly of 2.11 is 2.10 with more on it: only 2.11's release is taken to carry the new cuDNN.
  CHECK(attention("2.11.0.dev20260201") == AttentionKernel::Flash2);
  CHECK(attention("2.12.0.dev20260401") == AttentionKernel::Cudnn);
  // A source build (NVIDIA's containers) is its version's development, undated: 2.5.0a0 is not 2.5.0.
  CHECK(attention("2.5.0a0+872d972") == AttentionKernel::Flash2);
  CHECK(attention("2.14.0a0+gitd9abf9e") == AttentionKernel::Cudnn);
  // Blackwell too; Ampere never (PyTorch put cuDNN first on compute capability 9.0 and up only).
  CHECK(attention("2.11.0", "dgx-b200") == AttentionKernel::Cudnn);
  CHECK(attention("2.5.0", "dgx-a100-ib200") == AttentionKernel::Flash2);
  CHECK(point("  pytorch: 2.5.0\n", "dgx-a100-ib200").pytorch_settings.empty());
  const auto p = point("  pytorch: 2.5.0\n");
  REQUIRE(p.pytorch_settings.size() == 1);
  CHECK(p.pytorch_settings[0].rfind("attention cudnn (SDPA asked cuDNN first", 0) == 0);
}

TEST_CASE("what the scenario sets wins over the build and a model cuDNN cannot take keeps flash") {
  CHECK(point("  pytorch: 2.5.0\n  attention: flash2\n").setup.training.impl.attention == AttentionKernel::Flash2);
  // LLM Foundry's code chooses its own kernel (training.attention from its attn_impl): the build does not.
  CHECK(point("  pytorch: 2.5.0\n", "dgx-h100-ib400", "llama3.1-8b", "composer").setup.training.impl.attention ==
        AttentionKernel::Flash2);
  // A sliding window reaches SDPA as a mask, which cuDNN's kernel of 2.5 did not take.
  CHECK(point("  pytorch: 2.5.0\n", "dgx-h100-ib400", "mistral-7b-v0.1").setup.training.impl.attention ==
        AttentionKernel::Flash2);
}

TEST_CASE("under torchtitan the build decides nn.RMSNorm's fused kernel and torchtitan's own SDPA choice wins") {
  auto tt = [](const std::string& training) {
    return point(training, "dgx-h100-ib400", "llama3.1-8b", "torchtitan").setup.training.impl;
  };
  CHECK(tt("  pytorch: 2.9.0\n").fused_rms_norm);
  CHECK_FALSE(tt("  pytorch: 2.8.0\n").fused_rms_norm);
  CHECK(tt("  pytorch: 2.10.0.dev20251101\n").fused_rms_norm);  // a 2.10 nightly has 2.9
  CHECK_FALSE(tt("  pytorch: 2.9.0\n  rms_norm: reference\n").fused_rms_norm);
  // A plain loop's model writes its own norm (Hugging Face's LlamaRMSNorm): the build does not fuse it.
  CHECK_FALSE(point("  pytorch: 2.9.0\n").setup.training.impl.fused_rms_norm);
  // A checkout after PyTorch 2.9 would guess a fused norm from its date; the stated build says no.
  CHECK_FALSE(tt("  torchtitan_date: 2025-12-01\n  pytorch: 2.8.0\n").fused_rms_norm);
  // torchtitan asks SDPA for cuDNN itself from torchtitan#1776: whatever the build's default.
  CHECK(tt("  torchtitan_date: 2025-12-01\n  pytorch: 2.8.0\n").attention == AttentionKernel::Cudnn);
}

TEST_CASE("without training.pytorch a Hopper run timed with SDPA's flash kernel says so") {
  CHECK(point("  micro_batch: 1\n").sdpa_kernel_assumed);
  CHECK_FALSE(point("  pytorch: 2.4.0\n").sdpa_kernel_assumed);
  CHECK_FALSE(point("  attention: cudnn\n").sdpa_kernel_assumed);
  // The report says it on Hopper and Blackwell, where the build moves the kernel, and not on Ampere.
  const auto s = scenarios::parse_scenario(
      "model: gpt2\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining: {micro_batch: 1, seq_len: 1024}\n"
      "sweep:\n  cluster.preset: [dgx-h100-ib400, dgx-a100-ib200]\n",
      "t.yaml");
  const auto table = scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
  CHECK(table.find("note: (at cluster.preset=dgx-h100-ib400) attention is timed as SDPA's flash kernel") !=
        std::string::npos);
  CHECK(table.find("(at cluster.preset=dgx-a100-ib200) attention is timed") == std::string::npos);
}
