// The kernel-level compute model: kernel lists, the device profile's interpolation, the host,
// and the errors a bad profile gets. Numbers computed by hand from the formulas in
// sim/kernel_profile.cpp and models/kernel_list.cpp (docs/compute-model.md).
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/schedule_program.hpp"
#include "topologies/cluster.hpp"
#include "toy_profile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using test::error_of;
using test::replace;
using test::toy;
using test::toy_profile;

namespace {

// Every id in validation/data's entry lists.
std::set<std::string> published_ids() {
  std::set<std::string> ids;
  for (const char* f : {"published_kernels.yaml", "published_measurements.yaml"}) {
    std::ifstream in(std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/" + f);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("- id: ", 0) == 0) ids.insert(line.substr(6));
  }
  return ids;
}

}  // namespace

TEST_CASE("a GEMM at a measured point takes the measured time") {
  const auto p = toy();
  // 2 * 4096^3 FLOPs at 100 TFLOP/s; 2 * 8192^3 at 200.
  CHECK(p.gemm_seconds(4096, 4096, 4096) == Approx(2.0 * std::pow(4096.0, 3) / 100e12).epsilon(1e-12));
  CHECK(p.gemm_seconds(8192, 8192, 8192) == Approx(2.0 * std::pow(8192.0, 3) / 200e12).epsilon(1e-12));
  // The shipped A100 profile at its measured 8192^3 point: 253.7 TFLOP/s, scaled by the fitted
  // training factor of the family.
  const auto& a100 = sim::kernel_profile("device-a100-80gb");
  CHECK(a100.gemm_seconds(8192, 8192, 8192) * a100.fitted.tensor_scale ==
        Approx(2.0 * std::pow(8192.0, 3) / 253.7e12).epsilon(1e-9));
}

TEST_CASE("between measured GEMMs the correction comes from the two nearest shapes, weighted by 1/d^2") {
  const auto p = toy();
  // 8192 x 4096 x 8192 is log2-distance sqrt(2) from 4096^3 (correction 0.25) and 1 from 8192^3
  // (0.5): weights 1/2 and 1, correction (0.125 + 0.5) / 1.5 = 0.41667; the model time 2^39 / 400e12
  // (full waves).
  const double f = std::pow(2.0, 39);
  CHECK(p.gemm_correction(8192, 4096, 8192) == Approx(0.625 / 1.5).epsilon(1e-12));
  CHECK(p.gemm_seconds(8192, 4096, 8192) == Approx(f / 400e12 / (0.625 / 1.5)).epsilon(1e-12));
  // Far from both, both still count: 64 x 64 x 128 is d^2 = 97 from 4096^3 and 134 from 8192^3.
  CHECK(p.gemm_correction(64, 64, 128) == Approx((0.25 / 97 + 0.5 / 134) / (1.0 / 97 + 1.0 / 134)).epsilon(1e-12));
  // A skinny GEMM with the FLOPs of the square ones does not pull them: 802816 x 192 x 768 measured
  // at 50 TFLOP/s (2.37e11 FLOPs, between 4096^3 and 8192^3) leaves 8192 x 4096 x 8192 as it was,
  // and a shape like it takes its correction: model 3136 waves x 4 x 128^2 x 2 x 768 / 400e12 =
  // 0.789 ms against 4.735 ms measured, 1/6.
  const auto q = sim::parse_kernel_profile(
      toy_profile("    - {m: 802816, n: 192, k: 768, dtype: bf16, tflops: 50, source: p3}\n"), "toy.yaml");
  CHECK(q.gemm_correction(8192, 4096, 8192) == Approx(0.625 / 1.5).epsilon(1e-12));
  CHECK(q.gemm_correction(802816, 192, 768) == Approx(1.0 / 6).epsilon(1e-9));
  CHECK(q.gemm_correction(802816, 256, 768) < 0.25);
}

TEST_CASE("a GEMM whose tiles leave the last wave partly empty is slower per FLOP") {
  const auto p = toy();
  // 4 SMs, 128 x 128 tiles. m = 512, n = 128: 4 tiles, one full wave. m = 640: 5 tiles, two
  // waves, the second with one tile: twice the model time for 1.25x the FLOPs. (1 wave = 4 x 128^2 x
  // 2 x 4096 / 400e12; each shape over its correction, 0.3477 and 0.3473: from the two measured
  // shapes, d^2 = 34 and 53 for 512 x 128 x 4096.)
  const double wave = 4.0 * 128 * 128 * 2 * 4096 / 400e12;
  const double c512 = p.gemm_correction(512, 128, 4096), c640 = p.gemm_correction(640, 128, 4096);
  CHECK(c512 == Approx((0.25 / 34 + 0.5 / 53) / (1.0 / 34 + 1.0 / 53)).epsilon(1e-12));
  const double full = p.gemm_seconds(512, 128, 4096), partial = p.gemm_seconds(640, 128, 4096);
  CHECK(full == Approx(wave / c512).epsilon(1e-12));
  CHECK(partial == Approx(2 * wave / c640).epsilon(1e-12));
  CHECK(partial / (640.0 * 128 * 4096) == Approx(1.6 * c512 / c640 * full / (512.0 * 128 * 4096)).epsilon(1e-12));
  CHECK(partial / (640.0 * 128 * 4096) > 1.5 * full / (512.0 * 128 * 4096));
  // On the shipped A100 profile (108 SMs): 6912 x 512 fills one wave of 108 tiles of 128 x 256;
  // 7040 x 512 would need a second wave for two more tiles, so the library's best is 440 tiles of
  // 64 x 128 in 5 waves: 5 x 64 x 128 / (128 x 256) = 1.25x the time for 55/54 the FLOPs.
  const auto& a100 = sim::kernel_profile("device-a100-40gb");
  const double one = a100.gemm_seconds(54 * 128, 512, 4096) / (54.0 * 128 * 512 * 4096);
  const double two = a100.gemm_seconds(55 * 128, 512, 4096) / (55.0 * 128 * 512 * 4096);
  const double c54 = a100.gemm_correction(54 * 128, 512, 4096), c55 = a100.gemm_correction(55 * 128, 512, 4096);
  CHECK(two / one == Approx(1.25 * 54 / 55 * c54 / c55).epsilon(1e-9));
  CHECK(two > 1.2 * one);
}

TEST_CASE("memory-bound kernels: log-log between points, a floor below, the last bandwidth above") {
  const auto p = toy();
  // 1 MB in 0.1 us and 1 GB in 10 us: halfway in log bytes (10^7.5) is halfway in log time, 1 us.
  CHECK(p.memory_seconds(std::pow(10.0, 7.5)) == Approx(2e-6));  // ... below the 2 us launch floor
  CHECK(p.memory_seconds(std::pow(10.0, 8.4)) == Approx(std::pow(10.0, -7 + 2.4 * 2.0 / 3)).epsilon(1e-9));
  CHECK(p.memory_seconds(1e3) == Approx(2e-6));   // below the smallest point: its time, then the floor
  CHECK(p.memory_seconds(4e9) == Approx(4e-5));   // above: at the largest point's bandwidth
}

TEST_CASE("attention: FLOPs a causal kernel does, rates by sequence, quadratic at long sequences") {
  models::Kernel k;
  k.kind = models::KernelKind::Attention;
  k.batch_heads = 32, k.seq = 4096, k.head_dim = 128, k.causal = true;
  CHECK(k.flops() == Approx(4.0 * 32 * 4096.0 * 4096 * 128 / 2));
  k.backward = true;
  CHECK(k.flops() == Approx(2.5 * 4.0 * 32 * 4096.0 * 4096 * 128 / 2));

  const auto p = toy();
  // Only fwd+bwd measured, backward/forward rate ratio 0.5: forward runs at R (1 + 2.5 / 0.5) / 3.5,
  // backward at half that. At seq 2048, R is halfway (in log seq) from 100 to 200: 150 TFLOP/s.
  CHECK(p.attention_tflops(models::AttentionKernel::Flash2, false, 2048, 128, true) == Approx(150 * 6 / 3.5));
  CHECK(p.attention_tflops(models::AttentionKernel::Flash2, true, 2048, 128, true) == Approx(150 * 3 / 3.5));
  // The forward and backward times add up to what the fwd+bwd measurement says.
  const double fwd = p.attention_seconds(models::AttentionKernel::Flash2, false, 16, 4096, 128, true);
  const double bwd = p.attention_seconds(models::AttentionKernel::Flash2, true, 16, 4096, 128, true);
  CHECK(fwd + bwd == Approx(3.5 * 4.0 * 16 * 4096.0 * 4096 * 128 / 2 / 200e12));

  // Within a 2048-token sliding window, 8192 tokens: 4 x 16 x 8192 x 128 x (2048 - 2048^2 / 16384) =
  // 4 x 16 x 8192 x 128 x 1792 FLOPs forward, 7/32 of the causal 8192's, at the causal rate of a
  // 2048-token sequence, 150 x 6 / 3.5 TFLOP/s (above).
  const double windowed = p.attention_seconds(models::AttentionKernel::Flash2, false, 16, 8192, 128, true, 2048);
  CHECK(windowed == Approx(4.0 * 16 * 8192 * 128 * 1792 / (150e12 * 6 / 3.5)));
  // A window as long as the sequence, or longer, changes nothing.
  CHECK(p.attention_seconds(models::AttentionKernel::Flash2, true, 16, 4096, 128, true, 4096) == Approx(bwd));
  CHECK(p.attention_seconds(models::AttentionKernel::Flash2, true, 16, 4096, 128, true, 8192) == Approx(bwd));

  // The shipped A100 FlashAttention-2 curve (causal, head dim 128, fwd+bwd: 182 TFLOP/s at 8k,
  // 189 at 16k): doubling the sequence takes 4 x 182 / 189 = 3.85 x the time.
  const auto& a100 = sim::kernel_profile("device-a100-80gb");
  const double t8 = a100.attention_seconds(models::AttentionKernel::Flash2, false, 16, 8192, 128, true);
  const double t16 = a100.attention_seconds(models::AttentionKernel::Flash2, false, 16, 16384, 128, true);
  CHECK(t16 / t8 == Approx(4.0 * 182 / 189).epsilon(1e-9));
}

TEST_CASE("attention: past its last point a causal curve keeps closing its gap to the non-causal one") {
  // Causal fwd+bwd 80 TFLOP/s at 8k and 90 at 16k against a non-causal 100 at both: gaps 20% and
  // 10%, halving per doubling, so 5% at 32k (95 TFLOP/s) and 2.5% at 64k (97.5). Inside the curve,
  // and with no non-causal curve to close in on, as measured (flat past the end).
  auto text = toy_profile("", "{seq: 8192, tflops: 80, source: a}, {seq: 16384, tflops: 90, source: b}");
  text = replace(text, "memory:\n",
                 "    - {kernel: flash2, direction: fwd+bwd, causal: false, head_dim: 128, points: [{seq: 8192, tflops: "
                 "100, source: c}, {seq: 16384, tflops: 100, source: d}]}\nmemory:\n");
  const auto p = sim::parse_kernel_profile(text, "toy.yaml");
  const auto both = [&](double seq) {  // fwd+bwd TFLOP/s from the forward and backward rates
    const double f = p.attention_tflops(models::AttentionKernel::Flash2, false, seq, 128, true);
    const double b = p.attention_tflops(models::AttentionKernel::Flash2, true, seq, 128, true);
    return 3.5 / (1 / f + 2.5 / b);
  };
  CHECK(both(16384) == Approx(90));
  CHECK(both(32768) == Approx(95));
  CHECK(both(65536) == Approx(97.5));
  const auto alone = sim::parse_kernel_profile(
      toy_profile("", "{seq: 8192, tflops: 80, source: a}, {seq: 16384, tflops: 90, source: b}"), "toy.yaml");
  CHECK(alone.attention_tflops(models::AttentionKernel::Flash2, false, 65536, 128, true) ==
        Approx(alone.attention_tflops(models::AttentionKernel::Flash2, false, 16384, 128, true)));
}

TEST_CASE("attention: a kernel measured one way only takes the causal ratio of those measured both ways") {
  // cuDNN's forward measured non-causal only, 200 TFLOP/s. FlashAttention-2's forward both ways,
  // 60 causal against 100 non-causal: a causal cuDNN call runs at 0.6 x 200 = 120, where it ran at
  // the non-causal 200 before. Math's ratio (0.25 here: it computes every score) is never borrowed.
  auto text = toy_profile("", "{seq: 1024, tflops: 60, source: a}");
  text = replace(text, "direction: fwd+bwd, causal: true", "direction: fwd, causal: true");
  const std::string curve = "    - {kernel: KERNEL, direction: fwd, causal: CAUSAL, head_dim: 128, points: [{seq: 1024, tflops: RATE, source: s}]}\n";
  const auto add = [&](std::string kernel, std::string causal, std::string rate) {
    return replace(replace(replace(curve, "KERNEL", kernel), "CAUSAL", causal), "RATE", rate);
  };
  text = replace(text, "memory:\n", add("flash2", "false", "100") + add("cudnn", "false", "200") +
                                        add("math", "true", "10") + add("math", "false", "40") + "memory:\n");
  const auto p = sim::parse_kernel_profile(text, "toy.yaml");
  using K = models::AttentionKernel;
  CHECK(p.attention_tflops(K::Cudnn, false, 4096, 128, true) == Approx(120));
  CHECK(p.attention_tflops(K::Cudnn, false, 4096, 128, false) == Approx(200));
  CHECK(p.attention_tflops(K::Flash2, false, 4096, 128, true) == Approx(60));  // measured: as it is
  // A kernel's own directions come first: cuDNN's backward measured both ways, 90 and 100, sets its
  // forward's ratio (0.9), not FlashAttention-2's.
  const auto own = sim::parse_kernel_profile(
      replace(text, "memory:\n",
              replace(add("cudnn", "true", "90"), "fwd", "bwd") + replace(add("cudnn", "false", "100"), "fwd", "bwd") +
                  "memory:\n"),
      "toy.yaml");
  CHECK(own.attention_tflops(K::Cudnn, false, 4096, 128, true) == Approx(0.9 * 200));
  // With no tiled kernel measured both ways, the other causality stands in as measured.
  const auto alone = sim::parse_kernel_profile(replace(text, add("flash2", "false", "100"), ""), "toy.yaml");
  CHECK(alone.attention_tflops(K::Cudnn, false, 4096, 128, true) == Approx(200));
}

TEST_CASE("a GPU that is not the one measured runs the profile's kernels scaled to its peak and HBM") {
  // An H100 described with twice the bf16 peak and 2.4 TB/s of HBM (a what-if, or a variant of
  // the chip): GEMMs and attention take 989.4 / 1978.8 of the measured time, a memory-bound
  // kernel's time above the launch floor 3.35 / 2.4 of it; the floor stays.
  const auto h100 = topologies::device("h100-sxm");
  auto variant = h100;
  variant.peak_flops_bf16 = 2 * h100.peak_flops_bf16;
  variant.memory_bandwidth = 2.4e12;
  const auto* measured = sim::device_kernel_profile(h100);
  const auto* scaled = sim::device_kernel_profile(variant);
  REQUIRE(measured);
  REQUIRE(scaled);
  CHECK(measured == &sim::kernel_profile("device-h100-sxm"));  // the measured GPU shares the loaded profile
  CHECK(scaled == sim::device_kernel_profile(variant));          // made once per GPU
  CHECK(scaled->device.tensor == Approx(2.0));
  CHECK(scaled->device.memory == Approx(2.4 / 3.35));
  CHECK(scaled->gemm_seconds(8192, 8192, 8192) == Approx(measured->gemm_seconds(8192, 8192, 8192) / 2));
  CHECK(scaled->fp8_gemm_seconds(8192, 8192, 8192) == Approx(measured->fp8_gemm_seconds(8192, 8192, 8192) / 2));
  CHECK(scaled->attention_seconds(models::AttentionKernel::Flash2, false, 64, 8192, 128, true) ==
        Approx(measured->attention_seconds(models::AttentionKernel::Flash2, false, 64, 8192, 128, true) / 2));
  const double floor = measured->min_kernel_seconds;
  CHECK(scaled->memory_seconds(1e9) - floor == Approx((measured->memory_seconds(1e9) - floor) * 3.35 / 2.4));
  // An 8-byte kernel is the launch floor (scaled like the rest beyond it: 0.04 us).
  CHECK(scaled->memory_seconds(8) - floor == Approx((measured->memory_seconds(8) - floor) * 3.35 / 2.4));
  CHECK(scaled->memory_seconds(8) == Approx(floor).epsilon(0.02));
  CHECK(sim::compute_model_description(variant).find(
            "tensor-core kernels x2.000 (1978.8 TFLOP/s bf16 against the profile's 989.4); memory-bound kernels "
            "x0.716 (2.4 TB/s HBM against the measured H100-SXM5-80GB's)") != std::string::npos);
  // A fit made after the copy (validate --fit refits in the same process) reaches it: at half the
  // H100's tensor scale the scaled copy's GEMM takes twice as long too.
  const double before = sim::device_kernel_profile(variant)->gemm_seconds(8192, 8192, 8192);
  const auto key = sim::device_fit_key("H100-SXM5-80GB");
  auto halved = sim::fitted_parameters("H100-SXM5-80GB", "hopper");
  halved.tensor_scale /= 2;
  sim::override_fitted_parameters(key, halved);
  CHECK(sim::device_kernel_profile(variant)->gemm_seconds(8192, 8192, 8192) == Approx(2 * before));
  sim::clear_fitted_overrides();
  CHECK(sim::device_kernel_profile(variant)->gemm_seconds(8192, 8192, 8192) == Approx(before));
}

TEST_CASE("a device a profile also serves runs at its own fit, else at the measured device's") {
  // GB200 runs on B200's kernel profile (the same die). Without rows of its own it takes the fit of
  // B200's rows, so that the two differ by their datasheets' bf16 peaks alone: an 8k GEMM takes
  // 2250 / 2500 = 0.9 of B200's time on GB200 (mamf-finder measured 1745 / 1822 = 0.958, K24).
  // (The shipped fit has GB200 rows since stop 53; here GB200 is made a part without them.)
  const auto b200 = topologies::device("b200"), gb200 = topologies::device("gb200");
  const auto* on_b200 = sim::device_kernel_profile(b200);
  const auto* on_gb200 = sim::device_kernel_profile(gb200);
  REQUIRE(on_b200->name == on_gb200->name);
  CHECK(on_b200->fit_device() == b200.name);
  CHECK(on_gb200->fit_device() == gb200.name);
  sim::remove_fitted_parameters(sim::device_fit_key(gb200.name));
  sim::override_fitted_parameters(sim::device_fit_key(b200.name), {0.5, 0.7, "test: B200's rows", "", "2 rows, 28% off"});
  CHECK(on_b200->fitted.tensor_scale == Approx(0.5));
  CHECK(on_gb200->fitted.tensor_scale == Approx(0.5));
  CHECK(on_gb200->fitted.basis.empty());  // borrowed, not fitted
  CHECK(on_gb200->fitted.borrowed == "B200-SXM-180GB, whose kernel profile it shares");
  CHECK(on_gb200->fitted.held_out == "B200-SXM-180GB's 2 rows, 28% off");  // what to expect of the borrowed fit
  CHECK(on_gb200->gemm_seconds(8192, 8192, 8192) == Approx(0.9 * on_b200->gemm_seconds(8192, 8192, 8192)));
  CHECK(sim::compute_model_description(gb200).find("B200-SXM-180GB fit: tensor_scale 0.500") != std::string::npos);
  // A fit of its own wins.
  sim::override_fitted_parameters(sim::device_fit_key(gb200.name), {0.9, 0.7, "test: GB200's rows", ""});
  CHECK(on_gb200->fitted.tensor_scale == Approx(0.9));
  CHECK(on_b200->fitted.tensor_scale == Approx(0.5));
  // With neither device fitted, both take their family's.
  sim::remove_fitted_parameters(sim::device_fit_key(gb200.name));
  sim::remove_fitted_parameters(sim::device_fit_key(b200.name));
  CHECK(on_gb200->fitted.tensor_scale == Approx(sim::fitted_parameters("blackwell").tensor_scale));
  CHECK(on_b200->fitted.tensor_scale == Approx(sim::fitted_parameters("blackwell").tensor_scale));
  // The same GPU asked for twice gets the same copy.
  CHECK(sim::device_kernel_profile(gb200) == on_gb200);
  sim::clear_fitted_overrides();
}

TEST_CASE("PCIe cards run their SXM part's profile at their datasheet peak and HBM, at its fit") {
  // H100 PCIe: bf16 756.5 TFLOP/s and 2.0 TB/s against the SXM5's 989.4 and 3.35; H100 NVL 835.5 and
  // 3.9; A100 PCIe 80GB the SXM4's 312 and 1,935 against 2,039 GB/s.
  const auto sxm = topologies::device("h100-sxm"), pcie = topologies::device("h100-pcie"),
             nvl = topologies::device("h100-nvl"), a100 = topologies::device("a100-80gb"),
             a100_pcie = topologies::device("a100-pcie");
  const auto *on_sxm = sim::device_kernel_profile(sxm), *on_pcie = sim::device_kernel_profile(pcie),
             *on_nvl = sim::device_kernel_profile(nvl);
  REQUIRE(on_pcie->name == "device-h100-sxm");
  CHECK(on_pcie->gemm_seconds(8192, 8192, 8192) == Approx(on_sxm->gemm_seconds(8192, 8192, 8192) * 989.4 / 756.5));
  CHECK(on_nvl->gemm_seconds(8192, 8192, 8192) == Approx(on_sxm->gemm_seconds(8192, 8192, 8192) * 989.4 / 835.5));
  const double floor = on_sxm->min_kernel_seconds;
  CHECK(on_pcie->memory_seconds(1e9) - floor == Approx((on_sxm->memory_seconds(1e9) - floor) * 3.35 / 2.0));
  CHECK(on_nvl->memory_seconds(1e9) - floor == Approx((on_sxm->memory_seconds(1e9) - floor) * 3.35 / 3.9));
  CHECK(on_pcie->fitted.tensor_scale == Approx(on_sxm->fitted.tensor_scale));  // no rows of its own
  CHECK(on_pcie->fitted.borrowed == "H100-SXM5-80GB, whose kernel profile it shares");
  const auto *on_a100 = sim::device_kernel_profile(a100), *on_a100_pcie = sim::device_kernel_profile(a100_pcie);
  CHECK(on_a100_pcie->gemm_seconds(8192, 8192, 8192) == Approx(on_a100->gemm_seconds(8192, 8192, 8192)));
  const double a100_floor = on_a100->min_kernel_seconds;
  CHECK(on_a100_pcie->memory_seconds(1e9) - a100_floor ==
        Approx((on_a100->memory_seconds(1e9) - a100_floor) * 2.039 / 1.935));
  CHECK(pcie.pcie_card);
  CHECK(nvl.pcie_card);
  CHECK_FALSE(sxm.pcie_card);
  CHECK(pcie.sm == 90);
  CHECK(a100_pcie.sm == 80);
}

TEST_CASE("the B200 profile times cuDNN's attention at FlashAttention-4's published forward, FlashAttention-2 at its own") {
  // K27: FA4's causal forward at head dim 128 on B200, 1,604.1 TFLOP/s at 8192 tokens and 1,124.6 at
  // 2048; its backward at the profile's bwd/fwd ratio, 0.856. FlashAttention-2's own B200 curves stay.
  const auto& p = sim::kernel_profile("device-b200");
  using K = models::AttentionKernel;
  CHECK(p.attention_tflops(K::Cudnn, false, 8192, 128, true) == Approx(1604.1));
  CHECK(p.attention_tflops(K::Cudnn, false, 2048, 128, true) == Approx(1124.6));
  CHECK(p.attention_tflops(K::Cudnn, true, 8192, 128, true) == Approx(0.856 * 1604.1));
  CHECK(p.attention.bwd_fwd_rate_ratio == Approx(0.856));
  CHECK(p.attention_tflops(K::Flash2, false, 8192, 128, false) == Approx(361.591));
  // No causal FlashAttention-2 was measured on B200: its causal curve is the non-causal one at the
  // H100's ratio (the same SM80 code; K03's forward at head dim 128, 8k tokens: 333 against 370).
  const auto& h100 = sim::kernel_profile("device-h100-sxm");
  CHECK(p.attention_tflops(K::Flash2, false, 8192, 128, true) == Approx(325.4));
  CHECK(325.4 == Approx(361.591 * h100.attention_tflops(K::Flash2, false, 8192, 128, true) /
                        h100.attention_tflops(K::Flash2, false, 8192, 128, false)).epsilon(1e-3));
  // 4.4x FlashAttention-2's forward at 8k, where torchtitan#1196's cuDNN of May 2025 measured about 2x.
  CHECK(p.attention_tflops(K::Cudnn, false, 8192, 128, true) / p.attention_tflops(K::Flash2, false, 8192, 128, false) ==
        Approx(4.436).epsilon(0.001));
}

TEST_CASE("a PCIe card in an NVSwitch node is warned about, and not in a PCIe one") {
  const std::string base = "model: llama2-7b\ntraining: {micro_batch: 1, seq_len: 4096}\n";
  const auto swapped =
      scenarios::parse_scenario(base + "cluster: {preset: dgx-h100-ib400, nodes: 1, gpu: h100-pcie}\n", "p.yaml");
  REQUIRE(swapped.points[0].warnings.size() == 1);
  CHECK(swapped.points[0].warnings[0].find("H100-PCIe-80GB is a PCIe card") == 0);
  const auto pcie = scenarios::parse_scenario(
      base + "cluster: {preset: dgx-h100-ib400, nodes: 1, gpu: h100-pcie, intra_node: {kind: pcie, bandwidth: 63 GB/s}}\n",
      "p.yaml");
  CHECK(pcie.points[0].warnings.empty());
}

TEST_CASE("a V100 is warned about bf16 and about a mixture of experts' grouped GEMMs, fp16 and A100 are not") {
  auto warnings = [](const std::string& model, const std::string& gpu, const std::string& dtype) {
    return scenarios::parse_scenario("model: " + model + "\ncluster: {preset: dgx-a100-ib200, nodes: 1, gpu: " + gpu +
                                         "}\ntraining: {micro_batch: 1, seq_len: 2048, param_dtype: " + dtype + "}\n",
                                     "v.yaml")
        .points[0]
        .warnings;
  };
  const auto bf16 = warnings("llama2-7b", "v100-32gb", "bf16");
  REQUIRE(bf16.size() == 1);
  CHECK(bf16[0].find("V100-SXM2-32GB has no bf16 tensor cores (compute capability 7.0: fp16 only)") == 0);
  CHECK(warnings("llama2-7b", "v100-32gb", "fp16").empty());
  const auto moe = warnings("qwen3-30b-a3b", "v100-32gb", "fp16");
  REQUIRE(moe.size() == 1);
  CHECK(moe[0].find("torch._grouped_mm, which the experts' GEMMs are timed as, needs compute capability 8.0") == 0);
  CHECK(warnings("qwen3-30b-a3b", "a100-80gb", "bf16").empty());
}

TEST_CASE("MFU two ways: causal attention as the kernel runs it, and Megatron's 6N + 12 L h s") {
  const auto s = scenarios::parse_scenario(
      "model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining: {micro_batch: 1, seq_len: 4096}\n"
      "policies: [fsdp]\n", "m.yaml");
  const auto& setup = s.points[0].setup;
  const double ours = sim::kernel_flops_per_token(setup), megatron = models::model_flops_per_token(setup.model, 4096);
  // Ours: 6 x the GEMM weights (blocks and head) plus attention at 2 s h per layer forward (causal)
  // and 2.5x that backward: 7 s h per layer per token.
  const auto& m = setup.model;
  const double gemm_weights = double(models::parameter_count(m)) - 32000.0 * 4096 - 4096 * (2 * 32 + 1);
  CHECK(ours == Approx(6 * gemm_weights + 7.0 * 32 * 4096 * 4096).epsilon(1e-9));
  CHECK(megatron == Approx(6 * (gemm_weights + 4096 * (2 * 32 + 1)) + 12.0 * 32 * 4096 * 4096).epsilon(1e-9));
  const auto r = scenarios::run(s);
  CHECK(r[0].step.mfu / r[0].step.mfu_megatron == Approx(ours / megatron));
}

TEST_CASE("Megatron's MFU counts attention at the sequence trained, not the model's default") {
  // Llama 2 7B's own seq_len is 4096; trained at 8192 its attention term is 12 x 32 x 4096 x 8192 per
  // token, twice the default's.
  const auto s = scenarios::parse_scenario(
      "model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining: {micro_batch: 1, seq_len: 8192}\n"
      "policies: [fsdp]\n", "m.yaml");
  const auto& m = s.points[0].setup.model;
  REQUIRE(m.seq_len == 4096);
  // N: every parameter but the (untied) token embedding, as in the test above.
  const double per_token = 6 * (double(models::parameter_count(m)) - 32000.0 * 4096) + 12.0 * 32 * 4096 * 8192;
  const auto r = scenarios::run(s);
  const double peak = 312e12;  // A100 bf16 dense
  CHECK(r[0].step.mfu_megatron == Approx(r[0].step.tokens_per_s_per_gpu * per_token / peak).epsilon(1e-9));
  CHECK(models::model_flops_per_token(m, 8192) - models::model_flops_per_token(m, 4096) ==
        Approx(12.0 * 32 * 4096 * 4096));
}

TEST_CASE("bad profiles: a missing field, a curve that is not monotonic, a device it cannot serve") {
  CHECK_NOTHROW(toy());
  CHECK(error_of(replace(toy_profile(), "  k_overhead: 0\n", "")) ==
        "bad.yaml:8: gemm: missing required key 'k_overhead'");
  CHECK(error_of(toy_profile("", "{seq: 4096, tflops: 100, source: a}, {seq: 1024, tflops: 200, source: b}"))
            .find("bad.yaml:20: attention.curves[0].points[1].seq: not monotonic: sequence length 1024 after 4096") !=
        std::string::npos);
  // A rate that grows faster than the sequence would make longer sequences cheaper per token.
  CHECK(error_of(toy_profile("", "{seq: 1024, tflops: 100, source: a}, {seq: 2048, tflops: 300, source: b}"))
            .find("not monotonic: 300 TFLOP/s at seq 2048") != std::string::npos);
  CHECK(error_of(replace(toy_profile(), "{bytes: 1000000000, GBps: 1000", "{bytes: 100, GBps: 1000"))
            .find("memory.points[1].bytes: not monotonic") != std::string::npos);
  CHECK(error_of(toy_profile("    - {m: 4096, n: 4096, k: 4096, dtype: bf16, tflops: 90, source: p3}\n"))
            .find("measured twice") != std::string::npos);
  CHECK(error_of(replace(toy_profile(), "source: p1", "source: ''")).find("gemm.points[0].source") != std::string::npos);
  CHECK(error_of(replace(toy_profile(), "tagcsim-device-profile/1", "v2")).find("bad.yaml:1: format") !=
        std::string::npos);
  // The A100 profile given to an H100: refused, naming both.
  auto h100 = topologies::device("h100-sxm");
  h100.profile = "device-a100-80gb";
  CHECK_THROWS_WITH_AS(sim::device_kernel_profile(h100), Contains("device-a100-80gb.yaml:6: gpu: kernel profile "
                                                                 "'device-a100-80gb' is for A100-SXM4-80GB, it cannot "
                                                                 "serve the GPU 'H100-SXM5-80GB'"),
                       InputError);
  // From a scenario, the cluster's key is named too.
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nodes: 1\n"
                                                 "  gpu: {profile: device-a100-80gb}\npolicies: [fsdp]\n", "s.yaml"),
                       Contains("s.yaml:3: cluster: "), InputError);
  // An attention kernel the profile has no curves for: the scenario's key is blamed.
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\n"
                                "training:\n  attention: flash3\npolicies: [fsdp]\n", "s.yaml"),
      Contains("s.yaml:4: training.attention: "), InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\n"
                                "training:\n  attention: flash3\npolicies: [fsdp]\n", "s.yaml"),
      Contains("no curves for the 'flash3' attention kernel"), InputError);
  CHECK_THROWS_WITH_AS(sim::kernel_profile("device-nope"), Contains("no such kernel profile"), InputError);
  // The training keys that pick the kernels.
  auto training = [](const std::string& t) {
    return scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining:\n  " +
                                         t + "\npolicies: [fsdp]\n", "k.yaml");
  };
  CHECK_THROWS_WITH_AS(training("attention: flash4"),
                       Contains("k.yaml:4: training.attention: unknown attention kernel 'flash4'"), InputError);
  CHECK_THROWS_WITH_AS(training("activation_checkpointing: 1.5"),
                       Contains("k.yaml:4: training.activation_checkpointing: expected true (or full), false (or "
                                "none), selective_op or the share"),
                       InputError);
  // torchtitan's mode names: full and none read as they say; bare selective names its two options.
  const auto full = training("activation_checkpointing: full").points[0].setup.training;
  CHECK(full.activation_checkpointing);
  CHECK(full.impl.checkpoint_fraction == 1);
  CHECK(!full.impl.selective_op);
  CHECK(!training("activation_checkpointing: none").points[0].setup.training.activation_checkpointing);
  CHECK_THROWS_WITH_AS(training("activation_checkpointing: selective"),
                       Contains("k.yaml:4: training.activation_checkpointing: torchtitan's selective mode has two "
                                "options: selective_op"),
                       InputError);
  CHECK_THROWS_WITH_AS(training("cross_entropy: fast"), Contains("k.yaml:4: training.cross_entropy"), InputError);
  CHECK_THROWS_WITH_AS(training("rms_norm: apex"), Contains("k.yaml:4: training.rms_norm"), InputError);
  CHECK(training("rms_norm: fused").points[0].setup.training.impl.fused_rms_norm);
  CHECK(training("activation_checkpointing: 0.25").points[0].setup.training.impl.checkpoint_fraction == 0.25);
}

TEST_CASE("every shipped profile loads, names its GPU and cites published entries") {
  const auto ids = published_ids();
  REQUIRE(ids.size() > 400);
  const auto shipped = sim::shipped_kernel_profiles();
  CHECK(shipped == std::vector<std::string>{"device-a100-40gb", "device-a100-80gb", "device-b200", "device-h100-sxm",
                                            "device-h200-sxm"});
  auto cites = [&](const std::string& source) {
    for (const auto& id : ids)
      if (source.find(id) != std::string::npos) return true;
    return false;
  };
  for (const auto& name : shipped) {
    CAPTURE(name);
    const auto& p = sim::kernel_profile(name);
    CHECK(p.name == name);
    for (const char* key : {"gpu_name", "clocks", "driver", "cuda", "cublas", "cudnn", "measured_by"})
      CHECK(!p.metadata.at(key).empty());
    for (const auto& g : p.gemm.points) CHECK(cites(g.source));
    for (const auto& c : p.attention.curves)
      for (const auto& pt : c.points) CHECK(cites(pt.source));
    for (const auto& m : p.memory) CHECK(cites(m.source));
  }
  // The presets pick their profile by device.
  CHECK(topologies::device("a100-40gb").profile == "device-a100-40gb");
  CHECK(topologies::device("h200-sxm").profile == "device-h200-sxm");
  CHECK(sim::device_kernel_profile(topologies::device("v100-32gb")) == nullptr);  // no published kernels
}

TEST_CASE("AdamW over the shard: foreach moves 92 bytes a fp32 parameter, fused 40, and bf16 state half of each") {
  // The datasheet roofline (no kernel profile): time = bytes / (HBM bandwidth x memory efficiency).
  topologies::DeviceProfile gpu = topologies::device("h100-sxm");
  gpu.profile.clear();
  const double P = 1e9, rate = gpu.memory_bandwidth * gpu.memory_efficiency;
  sim::Training t;
  CHECK(sim::optimizer_seconds(P, t, gpu) == Approx(92 * P / rate));
  t.optimizer = sim::Training::Optimizer::Fused;  // one kernel: p, g, m, v read; p, m, v written; clip 1 + 2
  CHECK(sim::optimizer_seconds(P, t, gpu) == Approx(40 * P / rate));
  t.master_dtype = sim::Dtype::BF16;
  CHECK(sim::optimizer_seconds(P, t, gpu) == Approx(20 * P / rate));
  t.optimizer = sim::Training::Optimizer::Foreach;
  CHECK(sim::optimizer_seconds(P, t, gpu) == Approx(46 * P / rate));
}

TEST_CASE("master_dtype bf16: the shards and AdamW's moments are kept in 2 bytes, 6 a parameter instead of 12") {
  // Llama-2 70B on 8 GPUs (the report test's case): 68.98e9 x 12 / 8 = 96.4 GiB in fp32, 48.2 in bf16.
  auto state = [](const std::string& extra) {
    const auto s = scenarios::parse_scenario(
        "model: llama2-70b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining: {" + extra + "}\n", "t.yaml");
    return scenarios::run(s).at(0).step.memory.sharded_state_bytes / (1024.0 * 1024 * 1024);
  };
  CHECK(state("") == Approx(96.36).epsilon(0.001));
  CHECK(state("master_dtype: bf16") == Approx(96.36 / 2).epsilon(0.001));
  // The foreach path's sqrt(exp_avg_sq) over the whole shard is one state element a parameter; the
  // fused kernel keeps none.
  auto temporaries = [](const std::string& extra) {
    const auto s = scenarios::parse_scenario(
        "model: llama2-70b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining: {" + extra + "}\n", "t.yaml");
    return sim::detail::optimizer_temporary_bytes(s.points.at(0).setup);
  };
  CHECK(temporaries("fsdp: 2") == Approx(68.98e9 / 8 * 4).epsilon(0.001));
  CHECK(temporaries("fsdp: 2, master_dtype: bf16") == Approx(68.98e9 / 8 * 2).epsilon(0.001));
  CHECK(temporaries("fsdp: 2, optimizer: fused") == 0);
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-h100-ib400}\ntraining: {master_dtype: fp16}\n", "t.yaml"),
                       Contains("t.yaml:3: training.master_dtype: AdamW state kept in fp16 is not modelled"), InputError);
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-h100-ib400}\ntraining: {optimizer: adam}\n", "t.yaml"),
                       Contains("t.yaml:3: training.optimizer"), InputError);
}
