// `tagcsim calibrate box` on the CPU, its fits and its plan. Each fit runs on measurements the
// model itself generated at known parameters, with noise, so what it recovers is checked against
// the truth it came from; the plan is what a box of GPUs would be asked to measure. The files the
// box writes and its bad input are in test_calibrate_box_files.cpp, `calibrate check` in
// test_calibrate_check.cpp.
#include "box_testing.hpp"
#include "calibrate/box_fit.hpp"
#include "calibrate/unit_work.hpp"
#include "common/input.hpp"
#include "scenarios/scenario.hpp"
#include "sim/kernel_profile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace tagcsim;
using namespace tagcsim::calibrate;
using namespace tagcsim::test;  // synthetic box measurements, rel

namespace {

const ParamFit& param(const FitResult& r, Param p) {
  for (const auto& f : r.params)
    if (f.id.param == p) return f;
  FAIL("no parameter " << param_key(p));
  return r.params.front();
}

ScenarioShapes shapes(const std::string& yaml) {
  const auto sc = scenarios::parse_scenario(yaml, "inline.yaml");
  const auto& p = sc.points.front();
  return {"inline.yaml", p.setup.model, p.setup.units, p.setup.training};
}

}  // namespace

TEST_CASE("box fit: recovers the host's launch costs, NVLink4's ring and NVLS efficiencies from the model's own noisy times") {
  auto m = h100_box(8);
  const auto base = box_base_cluster(m, {0, 1, 2, 3, 4, 5, 6, 7});
  // The box: one node of 8 H100s on NVSwitch, NVLink4 at 450 GB/s with NVLS; the DGX H100 preset
  // around it (its NICs, transport and rails), its GPU's compute capability as measured.
  CHECK(base.nodes == 1);
  CHECK(base.gpus_per_node == 8);
  CHECK(base.intra.kind == "nvswitch");
  CHECK(base.intra.name == "nvlink4");
  CHECK(base.intra.bandwidth == 450e9);
  CHECK(base.intra.nvls_efficiency > 0);
  CHECK(base.gpu.name == "H100-SXM5-80GB");
  CHECK(base.gpu.sm == 90);
  CHECK(base.nics.transport.name == topologies::preset("dgx-h100-ib400").nics.transport.name);
  // The truth moves each parameter one box determines away from where the fit starts.
  auto truth = base;
  truth.collectives.host_launch = 3.5e-6;           // from 5.16 us
  truth.collectives.host_launch_per_channel = 0.7e-6;  // from 0.32 us
  truth.intra.efficiency = 0.76;                    // from 0.823
  truth.intra.nvls_efficiency = 0.60;               // from 0.657
  Noise noise;
  add_nccl(m, truth, noise);
  const auto f = fit_box(m);
  REQUIRE(f.nccl);
  const auto& r = *f.nccl;
  for (auto p : {Param::HostLaunch, Param::HostLaunchPerChannel, Param::IntraEfficiency, Param::NvlsEfficiency}) {
    CAPTURE(param_key(p));
    CHECK(param(r, p).status == ParamFit::Status::Fitted);
  }
  CHECK(param(r, Param::IntraEfficiency).id.scope == "nvlink4");
  // NCCL's pipeline depths are held at the presets' values, launch latency as in every fit.
  CHECK(param(r, Param::RingDepth).status == ParamFit::Status::Held);
  CHECK(param(r, Param::LaunchLatency).status == ParamFit::Status::Held);
  CHECK(f.cluster.collectives.ring_depth == base.collectives.ring_depth);
  CHECK(std::abs(f.cluster.collectives.host_launch / 3.5e-6 - 1) < 0.03);
  CHECK(std::abs(f.cluster.collectives.host_launch_per_channel / 0.7e-6 - 1) < 0.05);
  CHECK(std::abs(f.cluster.intra.efficiency - 0.76) < 0.01);
  CHECK(std::abs(f.cluster.intra.nvls_efficiency - 0.60) < 0.01);
  // One box has no NVLS tree: the tree keeps the preset's share of one node's NVLS rate (0.916).
  CHECK(f.cluster.intra.nvls_tree_efficiency / f.cluster.intra.nvls_efficiency ==
        doctest::Approx(base.intra.nvls_tree_efficiency / base.intra.nvls_efficiency));
  CHECK(f.cluster.intra.nvls_tree_efficiency < f.cluster.intra.nvls_efficiency);
  CHECK(r.error.median_abs < 0.03);  // the noise is uniform in +-3%
  CHECK(f.cluster.nodes == 1);
  CHECK(f.cluster.gpus_per_node == 8);
  // Held out: each collective and GPU count predicted by a fit to the other five.
  auto held_median = [&](const std::string& group) {
    std::vector<PointFit> pts;
    for (const auto& p : f.nccl_held_out)
      if (p.table == group) pts.push_back(p);
    return summarize(pts).median_abs;
  };
  // Fitted to the other five, every group comes within the noise; at the starting values the
  // 8-GPU all-gather (a ring on NVLink, 0.823 efficiency against the truth's 0.76) is ~8% off.
  CHECK(f.nccl_held_out.size() == r.points.size());
  for (const char* op : {"all_gather", "reduce_scatter", "all_reduce"})
    for (int gpus : {8, 2}) {
      const auto g = fmt::format("{} over {} GPUs", op, gpus);
      CAPTURE(g);
      CHECK(held_median(g) < 0.03);
    }
  std::vector<Sample> at_start;
  for (const auto& p : nccl_points(m))
    if (p.op_name == "all_gather" && p.ranks() == 8) at_start.push_back({p, f.base, "start"});
  const double start_median = summarize(evaluate(at_start)).median_abs;
  CHECK(start_median > 0.05);
  CHECK(held_median("all_gather over 8 GPUs") < start_median / 2);
  CHECK(box_report(f).find("    all_gather over 8 GPUs: ") != std::string::npos);
}

TEST_CASE("box fit: floor and rate of memory-bound kernels, from t = 3 us + bytes / 3.2 TB/s with 2% noise") {
  Noise noise;
  std::vector<double> x, t;
  for (double b = 65536; b <= 1.1e9; b *= 4) x.push_back(b), t.push_back((3e-6 + b / 3.2e12) * (1 + noise(0.02)));
  const auto f = fit_latency_bandwidth(x, t, "memory");
  CHECK(f.rate == rel(3.2e12, 0.03));
  CHECK(f.intercept_s == rel(3e-6, 0.1));
  CHECK(f.max_abs_error < 0.04);
  // Exact data: exact answer (the hand check of the normal equations).
  const auto e = fit_latency_bandwidth({1e6, 3e6}, {2e-6 + 1e6 / 1e12, 2e-6 + 3e6 / 1e12}, "exact");
  CHECK(e.rate == rel(1e12));
  CHECK(e.intercept_s == rel(2e-6));
  CHECK_THROWS_WITH_AS(fit_latency_bandwidth({1e6}, {1e-6}, "memory"),
                       "memory: expected at least 2 measurements to fit a floor and a rate, got 1", InputError);
}

TEST_CASE("unit_work: the kernel lists' GEMM and attention FLOPs add up to the units' (block, size, torchtitan, checkpointing, by operator)") {
  struct Case {
    const char* model;
    const char* training;
  } cases[] = {
      {"llama2-7b", "{wrap: block, micro_batch: 2, seq_len: 4096}"},
      {"gpt2-124m", "{wrap: size, micro_batch: 4, seq_len: 1024}"},
      {"llama3.1-8b", "{framework: torchtitan, micro_batch: 1, seq_len: 8192}"},
      {"llama2-13b", "{wrap: block, micro_batch: 1, seq_len: 4096, activation_checkpointing: true}"},
      {"llama3.1-8b", "{wrap: block, micro_batch: 1, seq_len: 8192, activation_checkpointing: selective_op}"},
  };
  for (const auto& c : cases) {
    const auto s = shapes(fmt::format("name: x\nmodel: {}\ncluster: {{preset: dgx-h100-ib400, nodes: 1}}\ntraining: {}\n"
                                      "policies: [fsdp]\n",
                                      c.model, c.training));
    for (const auto& u : s.units) {
      const std::string model = c.model;
      CAPTURE(model);
      CAPTURE(u.name);
      if (!u.kernels) {  // torchtitan's units: the simulator times them from their FLOPs
        CHECK(s.training.wrap == models::WrapPolicy::Torchtitan);
        CHECK_THROWS_WITH_AS(unit_work(u), doctest::Contains("has no kernel list"), InputError);
        continue;
      }
      const auto w = unit_work(u);
      auto flops = [](const std::vector<models::Kernel>& list) {
        double f = 0;
        for (const auto& k : list) f += k.flops();
        return f;
      };
      // units.cpp counts FLOPs its own way; the kernel lists the box measures must agree with it.
      CHECK(flops(w.forward.gemms) == rel(u.forward_flops * u.gemm_fraction, 1e-9));
      CHECK(flops(w.backward.gemms) == rel(u.backward_flops * u.backward_gemm_fraction, 1e-9));
      CHECK(flops(w.forward.attention) == rel(u.forward_flops * (1 - u.gemm_fraction), 1e-9));
      CHECK(w.forward.memory_bytes.size() + w.forward.gemms.size() + w.forward.attention.size() ==
            u.kernels->forward.size());
    }
  }
  // Llama-2 7B at 2 x 4096 tokens: q is 8192 x 4096 x 4096; its weight gradient 4096 x 4096 x 8192;
  // the attention core is 2 x 32 heads of 4096 tokens, head dim 128.
  const auto s = shapes("name: x\nmodel: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
                        "training: {micro_batch: 2, seq_len: 4096}\npolicies: [fsdp]\n");
  const auto w = unit_work(s.units[1]);
  CHECK(w.forward.gemms.front().m == 8192);
  CHECK(w.forward.gemms.front().n == 4096);
  CHECK(w.forward.gemms.front().op == "attn.q");
  REQUIRE(w.forward.attention.size() == 1);
  CHECK(w.forward.attention[0].batch_heads == 64);
  CHECK(w.forward.attention[0].head_dim == 128);
  CHECK(w.backward.attention[0].backward);
  const auto wgrad = std::find_if(w.backward.gemms.begin(), w.backward.gemms.end(),
                                  [](const auto& g) { return g.op == "attn.q wgrad"; });
  REQUIRE(wgrad != w.backward.gemms.end());
  CHECK(wgrad->m == 4096);
  CHECK(wgrad->k == 8192);
  CHECK(distinct_gemms(s.units).size() == 9);
  CHECK(distinct_attention(s.units).size() == 1);
}

TEST_CASE("box fit: the GEMM efficiency makes the simulator's roofline reproduce the measured scenario time") {
  // Llama-2 70B. Measured times are the datasheet roofline's at efficiency 0.62 (attention at the
  // roofline's 0.75 of the GEMM rate) with 2% noise; the fit must find 0.62.
  const auto sc = shapes("name: x\nmodel: llama2-70b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
                         "training: {micro_batch: 1, seq_len: 4096}\npolicies: [fsdp]\n");
  auto m = h100_box(1);
  const double peak = topologies::device("h100-sxm").peak_flops_bf16, eff = 0.62;
  Noise noise;
  for (const auto& g : distinct_gemms(sc.units))
    m.gemm.push_back({g.m, g.n, g.k, "bf16", g.flops() / (peak * eff) * (1 + noise(0.02)), "scenario: " + g.op});
  for (const auto& a : distinct_attention(sc.units))
    for (const char* dir : {"fwd", "bwd"}) {
      AttentionSample x{"math-blocked", dir, a.causal, a.batch_heads, a.seq, a.head_dim, 0, "scenario"};
      x.seconds = x.flops() / (peak * eff * 0.75);
      m.attention.push_back(x);
    }
  const auto f = fit_box(m, sc);
  CHECK(f.device.gemm_efficiency == rel(eff, 0.02));
  CHECK(f.device.gemm_basis.find("scenario's 81 units") != std::string::npos);
  CHECK(f.device.attention_vs_gemm == rel(0.75, 0.03));
  CHECK(f.cluster.gpu.gemm_efficiency == f.device.gemm_efficiency);
}

TEST_CASE("box fit: the share of an SM an NCCL block takes, from a GEMM alone and beside spinning blocks") {
  // 132 SMs. 33 blocks that each take a whole SM take a quarter of the GPU: the GEMM goes from 1 s to
  // 1 / 0.75 s. Taking half an SM each, an eighth: 1 / 0.875 s. A GEMM that did not slow, none.
  auto m = h100_box(1);
  CHECK(block_share({33, 512, 8192, 8192, 8192, 1.0, 1.0 / 0.75}, 132) == rel(1.0, 1e-12));
  CHECK(block_share({33, 512, 8192, 8192, 8192, 1.0, 1.0 / 0.875}, 132) == rel(0.5, 1e-12));
  CHECK(block_share({33, 512, 8192, 8192, 8192, 1.0, 0.99}, 132) == 0);  // faster beside: clamped
  m.sm_holds = {{8, 512, 8192, 8192, 8192, 1.0, 1.0 / (1 - 0.5 * 8 / 132.0)},
                {16, 512, 8192, 8192, 8192, 1.0, 1.0 / (1 - 0.5 * 16 / 132.0)},
                {32, 512, 8192, 8192, 8192, 1.0, 1.0 / (1 - 0.5 * 32 / 132.0)}};
  m.memory = {{"copy", 1e6, 4e-6 + 1e6 / 2.9e12}, {"copy", 1e9, 4e-6 + 1e9 / 2.9e12}};
  m.gemm.push_back({8192, 8192, 8192, "bf16", 2 * 8192.0 * 8192 * 8192 / 600e12, "grid: square"});
  m.empty_kernel_s = 2.5e-6;
  m.issue_s = 3.1e-6;
  const auto again = parse_measurements(measurements_yaml(m), "m.yaml");
  CHECK(measurements_yaml(again) == measurements_yaml(m));
  REQUIRE(again.sm_holds.size() == 3);
  const auto f = fit_box(again);
  CHECK(f.device.nccl_block_share == rel(0.5, 1e-5));  // after the file's rounding
  // The device profile carries it, and the simulator's loader reads it back.
  const auto kp = sim::parse_kernel_profile(device_profile_yaml(f), "device.yaml");
  CHECK(kp.nccl_block_share == rel(0.5, 1e-3));
  CHECK(box_report(f).find("block_share 0.500") != std::string::npos);
  // Files written before the measurement existed still load, with nothing measured.
  auto old = measurements_yaml(m);
  old.erase(old.find("sm_holds:"), old.find("launch:") - old.find("sm_holds:"));
  CHECK(parse_measurements(old, "old.yaml").sm_holds.empty());
  CHECK(fit_box(parse_measurements(old, "old.yaml")).device.nccl_block_share == 0);
  // A block count of 0 is an error with the file and line.
  auto bad = measurements_yaml(m);
  bad.replace(bad.find("blocks: 8"), 9, "blocks: 0");
  CHECK_THROWS_WITH_AS(parse_measurements(bad, "bad.yaml"), doctest::Contains("bad.yaml:"), InputError);
}

TEST_CASE("box profile: float8 GEMMs measured on the box time the simulator's float8 GEMMs") {
  // An H100 box: a bf16 8192^3 at 600 TFLOP/s and float8 at 1200. The profile takes the float8 point
  // and the datasheet relation peak.fp8 = 2 x bf16; a float8 GEMM at that shape takes its measured time.
  auto m = h100_box(1);
  m.memory = {{"copy", 1e6, 4e-6 + 1e6 / 2.9e12}, {"copy", 1e9, 4e-6 + 1e9 / 2.9e12}};
  const double flops = 2 * 8192.0 * 8192 * 8192;
  m.gemm.push_back({8192, 8192, 8192, "bf16", flops / 600e12, "grid: square"});
  m.gemm.push_back({8192, 8192, 8192, "fp8", flops / 1200e12, "grid: square"});
  m.empty_kernel_s = 2.5e-6;
  m.issue_s = 3.1e-6;
  const auto again = parse_measurements(measurements_yaml(m), "m.yaml");  // the file keeps the dtype
  REQUIRE(again.gemm.size() == 2);
  CHECK(again.gemm[1].dtype == "fp8");
  const auto f = fit_box(again);
  const auto kp = sim::parse_kernel_profile(device_profile_yaml(f), "device.yaml");
  CHECK(kp.peak.fp8 == rel(2 * kp.peak.bf16));
  REQUIRE(kp.gemm.fp8_points.size() == 1);
  CHECK(kp.fp8_gemm_seconds(8192, 8192, 8192) * kp.fitted.tensor_scale == rel(flops / 1200e12, 1e-5));
  CHECK(kp.gemm_seconds(8192, 8192, 8192) * kp.fitted.tensor_scale == rel(flops / 600e12, 1e-5));
  // Without float8 measurements (an A100 box, or a cuBLASLt without float8 kernels) no float8 rate.
  m.gemm.pop_back();
  CHECK(sim::parse_kernel_profile(device_profile_yaml(fit_box(m)), "device.yaml").peak.fp8 == 0);
}

TEST_CASE("box fit: one GPU skips the NCCL fit with a note, and a wrong NCCL result stops the fit") {
  auto m = h100_box(1);
  m.nccl.push_back({"all_reduce", {0}, 1 << 20, 5e-6, 5e-6, 20, 0});
  const auto f = fit_box(m);
  CHECK_FALSE(f.nccl);
  CHECK(f.nccl_skipped.find("one GPU") != std::string::npos);
  CHECK(box_cluster_yaml(f, "").find("# NCCL fit skipped: one GPU") != std::string::npos);
  auto bad = h100_box(2);
  bad.nccl.push_back({"all_gather", {0, 1}, 1 << 20, 5e-6, 5e-6, 20, 3});
  CHECK_THROWS_WITH_AS(fit_box(bad),
                       "measurements nccl[0] (all_gather of 1048576 bytes on GPUs 0,1): 3 wrong results; fix the "
                       "system before calibrating against it",
                       InputError);
}

TEST_CASE("box plan: NCCL over all GPUs and pairs, the scenario's GEMM shapes, one GPU plans no pairs") {
  const auto sc = shapes("name: x\nmodel: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
                         "training: {micro_batch: 2, seq_len: 4096}\npolicies: [fsdp]\n");
  auto p = make_box_plan({.visible = 8, .scenario = sc});
  CHECK(p.gpus.size() == 8);
  CHECK(p.nccl.size() == 5 + 3 + 27);  // 5 collectives on 8 GPUs, 3 on pair 0-1, all_reduce on the other 27 pairs
  CHECK(p.nccl[0].sizes.size() == 15);  // 8 B .. 2 GiB, x4
  // 9 scenario shapes x 4 dtypes (bf16, fp16, tf32, fp8); 18 token-scaled bf16 neighbours less 2 that
  // coincide (mlp.down wgrad at half the tokens is mlp.gate at half, attn.out wgrad is attn.q at
  // half); 6 squares x 4 dtypes less the bf16 4096 square (attn.q at half the tokens).
  CHECK(p.gemms.size() == 36 + 16 + 23);
  CHECK(plan_text(p).find("8192 x   4096 x   4096 fp8") != std::string::npos);
  CHECK(p.attention.front().batch_heads == 64);
  CHECK(plan_text(p).find("8192 x   4096 x   4096 bf16") != std::string::npos);
  const auto q = make_box_plan({.gpus = {0}, .visible = 1, .quick = true});
  CHECK(q.nccl.size() == 5);
  CHECK(plan_text(q).find("one GPU: no pairs") != std::string::npos);
}

TEST_CASE("box profile: a memory sweep whose small copies time alike loads back, clamped on the values as written") {
  // The first H200 box: 1 MiB and 4 MiB copies within a launch of each other (8.016, 7.648, 7.616 us).
  // Clamped in seconds but written as 6-digit GB/s over a 6-digit byte count, 4 MiB read back as
  // faster than 1 MiB and the loader refused the box's own profile.
  auto m = h100_box(1);
  m.memory = {{"copy", 262144, 8.016e-06}, {"copy", 1048576, 7.648e-06}, {"copy", 4194304, 7.616e-06},
              {"copy", 1073741824, 2.583e-04}};
  m.gemm.push_back({8192, 8192, 8192, "bf16", 2 * 8192.0 * 8192 * 8192 / 600e12, "grid: square"});
  const auto yaml = device_profile_yaml(fit_box(m));
  CHECK(yaml.find("bytes: 1048576,") != std::string::npos);  // byte counts exact
  CHECK(yaml.find("memory 4194304 bytes: 7.616e-06 s raised to") != std::string::npos);
  const auto kp = sim::parse_kernel_profile(yaml, "device.yaml");
  // The clamped points take the 256 KiB copy's time, to the written precision.
  CHECK(kp.memory_seconds(1048576) == rel(8.016e-06, 1e-5));
  CHECK(kp.memory_seconds(4194304) == rel(8.016e-06, 1e-5));
  CHECK(kp.memory_seconds(1073741824) == rel(2.583e-04, 1e-5));
  // The second H200 box: a clamp to exactly the time before, read back through GB/s x 1e9.
  m.memory = {{"copy", 65536, 5.36000007e-06}, {"copy", 262144, 5.52000012e-06}, {"copy", 1048576, 5.31199994e-06},
              {"copy", 4194304, 5.76000009e-06}};
  const auto second = sim::parse_kernel_profile(device_profile_yaml(fit_box(m)), "device.yaml");
  CHECK(second.memory_seconds(1048576) == rel(5.52e-06, 1e-5));
}
