// A mixture of experts' grouped GEMMs (torch._grouped_mm): at the measured rate of the fused kernel
// against the dense GEMMs of their stacked shape where PyTorch has one (Hopper, Blackwell), and as
// PyTorch's fallback elsewhere (A100): the offsets read back to the host, then one mm a group.
// Numbers computed by hand from the toy profile (tests/toy_profile.hpp) and the shipped profiles'
// own launch floor and GEMM times.
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"
#include "toy_profile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>

using namespace tagcsim;
using doctest::Approx;
using test::error_of;
using test::toy;
using test::toy_profile;

namespace {

models::Kernel gemm(double m, double n, double k, int groups = 1) {
  models::Kernel g;
  g.kind = models::KernelKind::Gemm;
  g.op = "experts";
  g.m = m, g.n = n, g.k = k;
  g.groups = groups;
  return g;
}

bool says(const std::string& error, const std::string& what) { return error.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("a grouped GEMM runs at its measured rate against the dense GEMMs of its stacked shape") {
  // The toy profile models 8192^3 at 400 TFLOP/s of waves and measured it at 200 (correction 0.5):
  // a grouped forward of 8 groups stacked to 8192 x 8192 x 8192 measured at 100 TFLOP/s is at half
  // the dense rate.
  const double f = 2.0 * std::pow(8192.0, 3);
  const auto p = sim::parse_kernel_profile(
      toy_profile("  grouped:\n    - {m: 8192, n: 8192, k: 8192, groups: 8, pass: fwd, time: " +
                  fmt::format("{:g} us", f / 100e12 * 1e6) + ", dtype: bf16, source: g1}\n"),
      "toy.yaml");
  CHECK(p.gemm.grouped_efficiency == Approx(0.5).epsilon(1e-5));  // the time printed to 6 digits
  models::Kernel k;
  k.kind = models::KernelKind::Gemm;
  k.m = k.n = k.k = 8192;
  CHECK(p.kernel_seconds(k, models::AttentionKernel::Flash2) == Approx(f / 200e12).epsilon(1e-9));
  k.groups = 8;
  CHECK(p.kernel_seconds(k, models::AttentionKernel::Flash2) == Approx(f / 100e12).epsilon(1e-5));
  // A forward and backward point counts its three GEMMs: the forward, the input gradient (m x k x n)
  // and the stacked weight gradients (groups k x n x m / groups), here 8192^3, 8192^3 and
  // 65536 x 8192 x 1024 (the same FLOPs; its model time at full waves 2^40 / 400e12, its
  // correction the measured points' (0.5 at log2-distance^2 9 + 0 + 9 = 18 from 8192^3, 0.25 at
  // 16 + 1 + 4 = 21 from 4096^3: weights 1/18, 1/21)).
  const double c3 = (0.5 / 18 + 0.25 / 21) / (1.0 / 18 + 1.0 / 21);
  const double dense = 2 * f / 200e12 + f / 400e12 / c3;
  const auto q = sim::parse_kernel_profile(
      toy_profile("  grouped:\n    - {m: 8192, n: 8192, k: 8192, groups: 8, pass: fwd+bwd, time: " +
                  fmt::format("{:g} us", 2 * dense * 1e6) + ", dtype: bf16, source: g2}\n"),
      "toy.yaml");
  CHECK(q.gemm.grouped_efficiency == Approx(0.5).epsilon(1e-5));
  // Without grouped points a grouped GEMM runs at the dense rate.
  CHECK(toy().gemm.grouped_efficiency == 1);
  // The shipped profiles: torch._grouped_mm at about two thirds of cuBLAS's dense rate on H100
  // (pytorch/ao#2490), about half on B200 (pytorch/ao's MoE training README).
  CHECK(sim::kernel_profile("device-h100-sxm").gemm.grouped_efficiency == Approx(0.658).epsilon(0.001));
  CHECK(sim::kernel_profile("device-b200").gemm.grouped_efficiency == Approx(0.542).epsilon(0.001));
  CHECK(sim::kernel_profile("device-a100-80gb").gemm.grouped_efficiency == 1);  // none published
}

TEST_CASE("bad input: a grouped GEMM point with one group, an unknown pass or no time") {
  // The point is the profile's line 17 (toy_profile's gemm points end at 15, `grouped:` is 16).
  auto with = [](const std::string& point) { return error_of(toy_profile("  grouped:\n    - {" + point + "}\n")); };
  auto says = [](const std::string& error, const std::string& what) { return error.find(what) != std::string::npos; };
  const std::string ok = "m: 8192, n: 8192, k: 8192, dtype: bf16, source: g, ";
  CHECK(says(with(ok + "groups: 1, pass: fwd, time: 1 ms"), "bad.yaml:17: gemm.grouped[0].groups"));
  CHECK(says(with(ok + "groups: 8, pass: bwd, time: 1 ms"), "bad.yaml:17: gemm.grouped[0].pass"));
  CHECK(says(with(ok + "groups: 8, pass: fwd"), "bad.yaml:17: gemm.grouped[0]: missing required key 'time'"));
  CHECK(says(with(ok + "groups: 8, pass: fwd, time: 1"), "bad.yaml:17: gemm.grouped[0].time"));
  CHECK(says(error_of(toy_profile("  grouped: []\n")), "bad.yaml:16: gemm.grouped: expected a list"));
}

TEST_CASE("without a fused grouped GEMM each group runs as a dense GEMM of its share of the rows") {
  // Two groups stacked to 8192 x 4096 x 4096: each is the toy's measured 4096^3 point, 100 TFLOP/s.
  const auto p = sim::parse_kernel_profile(toy_profile("  grouped_mm: {kernel: per_group, source: hand}\n"), "toy.yaml");
  const double one = 2.0 * std::pow(4096.0, 3) / 100e12;
  const auto k = gemm(8192, 4096, 4096, 2);
  CHECK(p.per_group(k));
  CHECK(p.group_seconds(k) == Approx(one).epsilon(1e-9));
  CHECK(p.kernel_seconds(k, models::AttentionKernel::Flash2) == Approx(2 * one).epsilon(1e-9));
  CHECK_FALSE(p.per_group(gemm(8192, 4096, 4096)));  // a plain GEMM is one launch
  CHECK_FALSE(toy().per_group(k));                     // the default: the fused kernel
  // The shipped profiles: PyTorch runs CUTLASS's kernel on compute capability 9.x and 10.x only.
  for (const char* fused : {"device-h100-sxm", "device-h200-sxm", "device-b200"})
    CHECK_FALSE(sim::kernel_profile(fused).per_group(k));
  for (const char* fallback : {"device-a100-40gb", "device-a100-80gb"}) CHECK(sim::kernel_profile(fallback).per_group(k));
}

TEST_CASE("the fallback reads the offsets back, then the host issues one mm a group") {
  // A 1 GB copy A (a), then a grouped GEMM of 4 groups of 256 x 768 x 2048 (g each) on an A100.
  // The host waits for A and the copy back (one launch floor), then issues the groups one by one:
  // at an issue cost far above g the GPU starts each group when the host issues it, so the unit
  // takes a + floor + 4 issue + g; at no issue cost a + floor + 4 g. On an H100 the same call is one
  // fused kernel that waits for nothing: a + the stacked GEMM over the grouped efficiency.
  const auto a100 = topologies::device("a100-80gb");
  const auto& prof = sim::kernel_profile("device-a100-80gb");
  const auto grouped = gemm(4 * 256, 768, 2048, 4);
  models::Kernel copy;
  copy.kind = models::KernelKind::Memory;
  copy.op = "A";
  copy.bytes = 1e9;
  auto unit = [&] {
    auto kernels = std::make_shared<models::UnitKernels>();
    kernels->forward = {copy, grouped};
    models::FsdpUnit u;
    u.kernels = kernels;
    return u;
  }();
  const double a = prof.memory_seconds(1e9), floor = prof.min_kernel_seconds, g = prof.group_seconds(grouped);
  CHECK(g == Approx(prof.gemm_seconds(256, 768, 2048)));
  const double issue = 100e-6;
  REQUIRE(issue > g);
  const auto host_bound = sim::unit_compute(unit, a100, sim::Dtype::BF16, false, models::AttentionKernel::Flash2, issue);
  CHECK(host_bound.forward_seconds == Approx(a + floor + 4 * issue + g));
  CHECK(host_bound.forward_kernels == 5);  // the copy and four mm launches
  CHECK(host_bound.forward_issue_seconds == Approx(5 * issue));
  const auto free = sim::unit_compute(unit, a100, sim::Dtype::BF16, false, models::AttentionKernel::Flash2, 0);
  CHECK(free.forward_seconds == Approx(a + floor + 4 * g));

  const auto h100 = topologies::device("h100-sxm");
  const auto& hprof = sim::kernel_profile("device-h100-sxm");
  const auto fused = sim::unit_compute(unit, h100, sim::Dtype::BF16, false, models::AttentionKernel::Flash2, issue);
  CHECK(fused.forward_seconds ==
        Approx(hprof.memory_seconds(1e9) + hprof.gemm_seconds(1024, 768, 2048) / hprof.gemm.grouped_efficiency));
  CHECK(fused.forward_kernels == 2);
}

TEST_CASE("a weight-gradient grouped GEMM falls back to one expert's weights a group") {
  // Qwen3-30B-A3B's experts (128 of 768 x 2048, 8 a token) at 4096 tokens: the gate's weight
  // gradient is stacked as 128 x 768 rows over 256 rows of k (4096 x 8 / 128), so each group is
  // one expert's 768 x 2048 gradient over its 256 tokens.
  const auto s = scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\n"
                             "training: {framework: torchtitan, micro_batch: 1, seq_len: 4096}\n",
                                            "t.yaml");
  const auto& prof = sim::kernel_profile("device-a100-80gb");
  const models::Kernel* wgrad = nullptr;
  for (const auto& u : s.points.front().setup.units)
    if (u.kernels)
      for (const auto& k : u.kernels->backward)
        if (k.op == "mlp.experts.gate wgrad (grouped)") wgrad = &k;
  REQUIRE(wgrad != nullptr);
  CHECK(wgrad->groups == 128);
  CHECK(wgrad->m == 128 * 768);
  CHECK(wgrad->k == 256);
  CHECK(prof.group_seconds(*wgrad) == Approx(prof.gemm_seconds(768, 2048, 256)));
}

TEST_CASE("the report says where the experts' GEMMs run group by group") {
  auto header = [](const std::string& preset) {
    const auto s = scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: {preset: " + preset +
                                                 ", nodes: 1}\ntraining: {framework: torchtitan, seq_len: 2048}\n",
                                             "t.yaml");
    return scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
  };
  CHECK(says(header("dgx-a100-ib200"), "experts' GEMMs: PyTorch has no fused torch._grouped_mm for the "
                                       "A100-SXM4-80GB: its fallback reads each call's offsets back to the host"));
  CHECK_FALSE(says(header("dgx-h100-ib400"), "experts' GEMMs"));
}

TEST_CASE("bad input: grouped_mm that is not fused or per_group, without a source, or beside grouped points") {
  // grouped_mm is the profile's line 16, after toy_profile's gemm points.
  auto with = [](const std::string& line) { return error_of(toy_profile(line)); };
  CHECK(says(with("  grouped_mm: {kernel: loop, source: hand}\n"), "bad.yaml:16: gemm.grouped_mm.kernel"));
  CHECK(says(with("  grouped_mm: {kernel: per_group}\n"), "bad.yaml:16: gemm.grouped_mm: missing required key 'source'"));
  CHECK(says(with("  grouped_mm: {kernel: per_group, source: ''}\n"), "bad.yaml:16: gemm.grouped_mm.source"));
  CHECK(says(with("  grouped_mm: per_group\n"), "bad.yaml:16: gemm.grouped_mm: expected {kernel: fused | per_group"));
  CHECK(says(with("  grouped_mm: {kernel: per_group, source: hand, note: x}\n"), "bad.yaml:16: gemm.grouped_mm"));
  CHECK(says(with("  grouped:\n    - {m: 8192, n: 8192, k: 8192, groups: 8, pass: fwd, time: 1 ms, dtype: bf16, "
                  "source: g}\n  grouped_mm: {kernel: per_group, source: hand}\n"),
             "bad.yaml:18: gemm.grouped_mm.kernel: measured grouped points time the fused kernel"));
}
