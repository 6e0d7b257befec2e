// `tagcsim calibrate box` and `calibrate check` on the CPU: the plan, the fits (on measurements the
// model itself generated, with noise), the files they write and that the simulator loads, the
// check's comparison from a synthetic measured step, the TAGC stages behind compression tasks, and
// every kind of bad input.
#include "command_testing.hpp"
#include "calibrate/box/runtime.hpp"
#include "calibrate/box_fit.hpp"
#include "calibrate/check_compare.hpp"
#include "calibrate/check_stages.hpp"
#include "calibrate/check_walk.hpp"
#include "calibrate/unit_work.hpp"
#include "common/input.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"

#include "sim/kernel_profile.hpp"
#include "topologies/cluster_yaml.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tagcsim;
using namespace tagcsim::calibrate;
namespace fs = std::filesystem;

namespace {

// Deterministic noise in [-amp, amp].
struct Noise {
  std::uint64_t s = 12345;
  double operator()(double amp) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return amp * (double((s >> 11) & 0xfffff) / double(0xfffff) * 2 - 1);
  }
};

// doctest::Approx is absolute for values below 1 (its scale is 1): seconds and bytes/s need a relative one.
doctest::Approx rel(double v, double epsilon = 1e-6) { return doctest::Approx(v).epsilon(epsilon).scale(1e-300); }

fs::path temp_dir(const std::string& name) {
  const auto p = fs::temp_directory_path() / fmt::format("tagcsim-box-{}-{}", name, ::getpid());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A box of `n` H100s on an NVSwitch board, as the CUDA side would describe it.
BoxMeasurements h100_box(int n) {
  BoxMeasurements m;
  m.command = "tagcsim calibrate box (synthetic)";
  m.box.driver = "580.159.03";
  m.box.cuda_driver = "13.0";
  m.box.cuda_runtime = "13.0";
  m.box.nccl = "2.28.9";
  m.box.cublaslt = "13.0.0";
  m.box.cudnn = "9.19.0";
  m.box.host = "synthetic";
  m.box.date = "2026-01-01T00:00:00Z";
  for (int i = 0; i < n; ++i)
    m.box.gpus.push_back({i, "NVIDIA H100 80GB HBM3", 90, 132, 85e9, 1980, 2619, 5120, fmt::format("0000:{:02x}:00.0", i)});
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) m.box.links.push_back({a, b, true, 18, 0});
  return m;
}

// NCCL times from the collective model itself at known parameters, with +-3% noise: the
// collectives over all GPUs and over GPUs 0-1, every GPU's kernels launched by one thread (as the
// box runs them).
void add_nccl(BoxMeasurements& m, const topologies::Cluster& truth, Noise& noise) {
  const int n = int(m.box.gpus.size());
  std::vector<std::vector<int>> groups = {{}, {0, 1}};
  for (int i = 0; i < n; ++i) groups[0].push_back(i);
  for (const auto& g : groups)
    for (const char* op : {"all_gather", "reduce_scatter", "all_reduce"})
      for (double s = 8; s <= 2.2e9; s *= 4) {
        auto c = truth;
        c.gpus_per_node = int(g.size());
        const double t = sim::plan_collective(c, sim::parse_collective_op(op), s, sim::whole_cluster(c),
                                              sim::PlanOptions{.gpus_per_process = int(g.size())})
                             .seconds();
        m.nccl.push_back({op, g, s, t * (1 + noise(0.03)), t, 20, 0});
      }
}

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

const char* kSmall = R"(
name: small
model: {layers: 2, hidden: 256, heads: 4, kv_heads: 4, ffn: 1024, vocab: 1024, seq_len: 128, norm: rmsnorm, gated_mlp: true}
cluster: {preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 2}
training: {micro_batch: 1, seq_len: 128}
policies: [fsdp, tagc, tagc-batched, lhc]
)";

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

TEST_CASE("box files: a recorded box loads and drives a scenario through cluster: {file: ...}") {
  auto m = h100_box(2);
  auto truth = box_base_cluster(m, {0, 1});
  truth.intra.efficiency = 0.7;
  Noise noise;
  add_nccl(m, truth, noise);
  for (double b = 65536; b <= 1.1e9; b *= 4) {
    m.memory.push_back({"copy", b, 4e-6 + b / 2.9e12});
    m.memory.push_back({"add", b, 4e-6 + b / 2.9e12});
  }
  for (double s : {8192.0, 16384.0}) m.gemm.push_back({s, s, s, "bf16", 2 * s * s * s / 600e12, "grid: square"});
  m.gemm.push_back({8192, 8192, 8192, "tf32", 2 * 8192.0 * 8192 * 8192 / 300e12, "grid: square"});
  for (double seq : {1024.0, 4096.0})
    for (const char* dir : {"fwd", "bwd"}) {
      AttentionSample a{"math-blocked", dir, true, 131072 / seq, seq, 128, 0, "sweep"};
      a.seconds = a.flops() / (dir[0] == 'f' ? 300e12 : 250e12);
      m.attention.push_back(a);
    }
  m.empty_kernel_s = 2.5e-6;
  m.issue_s = 3.1e-6;

  // measurements.yaml round trip: what the CUDA side writes is what the fit reads.
  const auto again = parse_measurements(measurements_yaml(m), "m.yaml");
  CHECK(measurements_yaml(again) == measurements_yaml(m));

  const auto dir = temp_dir("files");
  const auto f = fit_box(again);
  BoxPlanOptions po{.visible = 2, .out_dir = dir.string(), .gpu_name = m.box.gpus[0].name};
  const auto plan = make_box_plan(po);
  write_box_files(f, plan, dir.string());
  for (const char* name : {"measurements.yaml", "device-h100-80gb-hbm3.yaml", "cluster-h100-80gb-hbm3-2gpu.yaml",
                           "report.txt"})
    CHECK(fs::exists(dir / name));
  CHECK(f.device.memory_efficiency == rel(2.9e12 / 3.35e12, 1e-6));

  // The device profile, read by the simulator's own loader: a measured shape takes its measured time.
  const std::string profile = read(dir / "device-h100-80gb-hbm3.yaml");
  const auto kp = sim::parse_kernel_profile(profile, "device.yaml");
  CHECK(kp.gpu == "H100-SXM5-80GB");
  CHECK(kp.family == "hopper");
  CHECK(kp.metadata.at("driver") == "580.159.03");
  CHECK(kp.gemm.points.size() == 2);  // bf16 only; the TF32 GEMM is in the header comment
  CHECK(profile.find("# TF32 GEMMs") != std::string::npos);
  CHECK(kp.gemm_seconds(8192, 8192, 8192) == rel(2 * 8192.0 * 8192 * 8192 / 600e12, 1e-5));
  CHECK(kp.gemm_seconds(16384, 16384, 16384) == rel(2 * 16384.0 * 16384 * 16384 / 600e12, 1e-5));
  CHECK(kp.memory_seconds(4194304) == rel(4e-6 + 4194304 / 2.9e12, 1e-5));
  // Attention at 1024 tokens forward: 300 TFLOP/s as measured (the math kernel: math-blocked).
  CHECK(kp.attention_tflops(models::AttentionKernel::Math, false, 1024, 128, true) == rel(300, 1e-6));
  CHECK(kp.attention_tflops(models::AttentionKernel::Math, true, 4096, 128, true) == rel(250, 1e-6));
  // The fused kernels the box cannot run keep the shipped H100 profile's published curves.
  CHECK(kp.has_attention(models::AttentionKernel::Flash2));
  const auto& shipped = sim::kernel_profile("device-h100-sxm");
  CHECK(kp.attention_tflops(models::AttentionKernel::Flash2, false, 4096, 128, true) ==
        rel(shipped.attention_tflops(models::AttentionKernel::Flash2, false, 4096, 128, true)));
  CHECK(kp.min_kernel_seconds == rel(2.5e-6));
  CHECK(kp.issue_seconds == rel(3.1e-6 + sim::HostCost{}.kernel_issue_s));

  // The cluster file: every key the loader knows, as the box was fitted; it names the profile beside it.
  const std::string cluster_text = read(dir / "cluster-h100-80gb-hbm3-2gpu.yaml");
  for (const char* key : {"transport:", "rail_optimized:", "nvls_efficiency:", "generation: nvlink4",
                          "compute_capability: 9.0", "host_launch_per_channel:", "nvls_chunk_overhead:",
                          "profile: device-h100-80gb-hbm3.yaml"})
    CHECK_MESSAGE(cluster_text.find(key) != std::string::npos, key);
  const auto loaded = topologies::load_cluster(Input::load_file((dir / "cluster-h100-80gb-hbm3-2gpu.yaml").string())["cluster"]);
  CHECK(loaded.gpu.profile == (dir / "device-h100-80gb-hbm3.yaml").lexically_normal().string());
  auto expected = f.cluster;
  expected.gpu.profile = loaded.gpu.profile;
  CHECK(topologies::cluster_yaml(loaded) == topologies::cluster_yaml(expected));  // the same cluster, key for key

  // The cluster file drives a scenario; keys beside `file` override it.
  std::ofstream(dir / "s.yaml") << "name: s\nmodel: gpt2-124m\ncluster: {file: cluster-h100-80gb-hbm3-2gpu.yaml}\n"
                                   "training: {micro_batch: 4, seq_len: 1024}\npolicies: [fsdp]\n";
  const auto sc = scenarios::load_scenario((dir / "s.yaml").string());
  const auto& c = sc.points[0].setup.cluster;
  CHECK(c.gpus() == 2);
  CHECK(c.intra.efficiency == f.cluster.intra.efficiency);
  CHECK(c.collectives.host_launch == f.cluster.collectives.host_launch);
  CHECK(c.gpu.memory_efficiency == f.device.memory_efficiency);
  CHECK(c.gpu.gemm_efficiency == rel(600e12 / 989.4e12, 1e-3));
  CHECK(sim::compute_model_description(c.gpu).find("kernel profile device-h100-80gb-hbm3-box") != std::string::npos);
  const auto r = scenarios::run(sc);
  REQUIRE(r.size() == 1);
  CHECK(r[0].step.step_time_s > 0);
  std::ofstream(dir / "t.yaml") << "name: t\nmodel: gpt2-124m\ncluster: {file: cluster-h100-80gb-hbm3-2gpu.yaml, "
                                   "gpus_per_node: 1}\ntraining: {micro_batch: 4, seq_len: 1024}\npolicies: [fsdp]\n";
  CHECK(scenarios::load_scenario((dir / "t.yaml").string()).points[0].setup.cluster.gpus() == 1);

  const std::string report = read(dir / "report.txt");
  CHECK(report.find("== NCCL") != std::string::npos);
  CHECK(report.find("residuals: median |error|") != std::string::npos);
  CHECK(report.find("intra_node.efficiency@nvlink4") != std::string::npos);
  fs::remove_all(dir);
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

TEST_CASE("check: the report compares a synthetic measured step with the prediction task by task") {
  const auto sc = scenarios::parse_scenario(kSmall, "small.yaml");
  const auto& setup = sc.points[0].setup;
  const auto pred = sim::simulate(setup, sc.points[0].policies[0]);
  // Measured: every compute-stream task 25% longer than predicted, the rest as predicted.
  MeasuredRun m;
  m.policy = "fsdp";
  m.gpus = 2;
  m.box = "synthetic";
  double compute_pred = 0;
  for (std::size_t i = 0; i < pred.schedule.tasks.size(); ++i) {
    auto t = pred.replay.timings[i];
    if (pred.schedule.tasks[i].stream == sim::Stream::Compute) {
      compute_pred += t.end - t.start;
      t.end = t.start + 1.25 * (t.end - t.start);
    }
    m.timings.push_back(t);
  }
  m.step_times = {1.30 * pred.step_time_s, 1.20 * pred.step_time_s, 1.25 * pred.step_time_s};
  // Written and read back as the executor's file.
  const auto back = parse_measured_run(measured_run_json(m, pred.schedule), "measured-fsdp.json", pred.schedule);
  const auto c = compare(pred, back);
  CHECK(c.measured_step == rel(1.25 * pred.step_time_s));  // the median step
  CHECK(c.error() == rel(1 / 1.25 - 1));
  const auto& cs = c.streams[std::size_t(sim::Stream::Compute)];
  CHECK(cs.predicted_busy == rel(compute_pred));
  CHECK(cs.measured_busy == rel(1.25 * compute_pred));
  const auto& fwd = c.categories[std::size_t(sim::Category::Forward)];
  CHECK(fwd.measured == rel(1.25 * fwd.predicted));
  const auto& ag = c.categories[std::size_t(sim::Category::AllGather)];
  CHECK(ag.measured == rel(ag.predicted));
  for (const auto& t : c.tasks)
    if (pred.schedule.tasks[std::size_t(t.task)].stream == sim::Stream::Compute)
      CHECK(t.measured_s == rel(1.25 * t.predicted_s));
  const std::string report = comparison_report({c}, {pred});
  CHECK(report.find("-20.0%") != std::string::npos);
  CHECK(report.find("tasks furthest from their prediction") != std::string::npos);
  const std::string trace = measured_trace(pred, back, "measured");
  CHECK(trace.find(pred.schedule.tasks[0].name) != std::string::npos);
  // A trace of another schedule (another policy's) is refused.
  const auto tagc = sim::simulate(setup, sc.points[0].policies[1]);
  CHECK_THROWS_WITH_AS(parse_measured_run(measured_run_json(m, pred.schedule), "measured-fsdp.json", tagc.schedule),
                       doctest::Contains("belongs to another schedule"), InputError);
}

TEST_CASE("check: the executor's host walk gives back the replay's times on every stream FSDP1 and FSDP2 use") {
  // The walk the executor runs on the GPUs, on ideal streams with the replay's task durations:
  // if it issues, waits and spends host time as the simulator does, every task starts when the
  // replay started it. One node: the replay's collectives have no contention to add.
  struct Case {
    const char* training;
    std::vector<sim::Stream> streams;  // each must carry tasks
  } cases[] = {
      // FSDP1: the rate limiter's syncs, backward prefetch, the post-backward stream's casts.
      {"{micro_batch: 1, seq_len: 128, reduce_dtype: fp32}",
       {sim::Stream::Host, sim::Stream::Compute, sim::Stream::AllGather, sim::Stream::PostBackward}},
      // FSDP2, HYBRID_SHARD inside the node, reduce-scatters on their own process group.
      {"{fsdp: 2, sharding: hybrid_shard, hybrid_shard_gpus: 2, micro_batch: 1, seq_len: 128, "
       "reduce_scatter_group: separate, grad_accumulation: 2}",
       {sim::Stream::Host, sim::Stream::Compute, sim::Stream::AllGather, sim::Stream::ReduceScatter,
        sim::Stream::AllReduce}},
  };
  for (const auto& c : cases) {
    const std::string training = c.training;
    CAPTURE(training);
    const std::string yaml = fmt::format(
        "name: walk\nmodel: {{layers: 3, hidden: 256, heads: 4, kv_heads: 4, ffn: 1024, vocab: 1024, seq_len: 128, "
        "norm: rmsnorm, gated_mlp: true}}\ncluster: {{preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 4}}\n"
        "training: {}\npolicies: [fsdp, tagc]\n",
        c.training);
    const auto sc = scenarios::parse_scenario(yaml, "walk.yaml");
    for (const auto& policy : sc.points[0].policies) {
      CAPTURE(policy.label);
      const auto pred = sim::simulate(sc.points[0].setup, policy);
      const auto& tasks = pred.schedule.tasks;
      std::vector<double> seconds;
      std::array<int, sim::kStreams> per_stream{};
      int delayed = 0;
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        seconds.push_back(pred.replay.timings[i].end - pred.replay.timings[i].start);
        ++per_stream[std::size_t(tasks[i].stream)];
        delayed += tasks[i].issue_delay > 0;
      }
      if (policy.kind == sim::PolicyKind::Fsdp)
        for (auto st : c.streams) CHECK_MESSAGE(per_stream[std::size_t(st)] > 0, sim::to_string(st));
      CHECK(delayed > 0);  // tasks issued partway into a host segment
      const auto walked = emulate_step(pred.schedule, seconds);
      int off = 0;
      for (std::size_t i = 0; i < tasks.size(); ++i)
        if (std::abs(walked[i].start - pred.replay.timings[i].start) > 1e-12 ||
            std::abs(walked[i].end - pred.replay.timings[i].end) > 1e-12) {
          if (off++ < 3)
            CHECK_MESSAGE(false, fmt::format("task {} '{}' on {}: walked {:.9f}-{:.9f}, replayed {:.9f}-{:.9f}", i,
                                             tasks[i].name, sim::to_string(tasks[i].stream), walked[i].start,
                                             walked[i].end, pred.replay.timings[i].start, pred.replay.timings[i].end));
        }
      CHECK(off == 0);
    }
  }
  // A walk that ignored issue_delay would start the first GPU task at 0: the walk does not.
  const auto sc = scenarios::parse_scenario(kSmall, "small.yaml");
  const auto pred = sim::simulate(sc.points[0].setup, sc.points[0].policies[0]);
  std::vector<double> zero(pred.schedule.tasks.size(), 0.0);
  const auto walked = emulate_step(pred.schedule, zero);
  for (std::size_t i = 0; i < pred.schedule.tasks.size(); ++i)
    if (pred.schedule.tasks[i].stream != sim::Stream::Host && pred.schedule.tasks[i].issued_after.empty()) {
      CHECK(walked[i].start == rel(pred.schedule.tasks[i].issue_delay));
      break;
    }
}

TEST_CASE("check: every compression-kernel task maps to TAGC stages, and they run on the CPU engine") {
  const auto sc = scenarios::parse_scenario(kSmall, "small.yaml");
  const auto& setup = sc.points[0].setup;
  auto engine = kernels::make_engine(kernels::Backend::Cpu);
  std::size_t biggest = 0;
  for (const auto& u : setup.units) biggest = std::max(biggest, std::size_t(u.params));
  StageBuffers buffers(*engine, biggest, setup.shard_size());
  for (const auto& p : sc.points[0].policies) {
    if (p.kind == sim::PolicyKind::Fsdp) continue;
    const auto s = sim::build_policy_step(setup, p, sim::kernel_profile_for(setup.cluster.gpu));
    int seen = 0;
    for (const auto& t : s.tasks) {
      if (t.category != sim::Category::CompressionKernel) continue;
      CAPTURE(t.name);
      CHECK_FALSE(compression_stages(setup, p, t).empty());
      if (seen++ < 3) CHECK(run_compression_task(*engine, buffers, setup, p, t));
    }
    CHECK(seen > 0);
  }
  // TAGC as published, N = 2 shards: the second task runs 1 more sparsify+index and 2 read+compress.
  const auto tagc = sim::build_policy_step(setup, sc.points[0].policies[1], sim::kernel_profile_for(setup.cluster.gpu));
  for (const auto& t : tagc.tasks)
    if (t.name.rfind("tagc kernels x2 shards", 0) == 0) {
      const auto calls = compression_stages(setup, sc.points[0].policies[1], t);
      REQUIRE(calls.size() == 4);
      CHECK(calls[0].kind == StageCall::Kind::Sparsify);
      CHECK(calls[0].repeat == 1);
      CHECK(calls[3].kind == StageCall::Kind::Compress);
      CHECK(calls[3].repeat == 2);
      CHECK(calls[3].elements == double(setup.units[std::size_t(t.unit)].params) / 2);
      break;
    }
}

TEST_CASE("bad input: a GPU index out of range, an unwritable output folder, a scenario larger than the box") {
  CHECK_THROWS_WITH_AS(make_box_plan({.gpus = {0, 5}, .visible = 2}),
                       "--gpus: GPU 5 is out of range: this box has 2 GPU(s), indices 0..1", InputError);
  CHECK_THROWS_WITH_AS(make_box_plan({.gpus = {1, 1}, .visible = 2}), "--gpus: GPU 1 is listed twice", InputError);
  CHECK_THROWS_WITH_AS(check_writable_dir("/proc/tagcsim-no-such-dir", "--out"),
                       doctest::Contains("--out: cannot create the output folder '/proc/tagcsim-no-such-dir'"),
                       InputError);
  const auto dir = temp_dir("bad");
  std::ofstream(dir / "file") << "x";
  CHECK_THROWS_WITH_AS(check_writable_dir((dir / "file").string(), "--out"),
                       doctest::Contains("cannot create the output folder"), InputError);
  const auto q = scenarios::load_scenario("scenarios/quickstart.yaml");
  CHECK_THROWS_WITH_AS(check_fits_box(q.points[0].setup, 1, "scenarios/quickstart.yaml"),
                       doctest::Contains("scenarios/quickstart.yaml: the scenario needs 4 node(s) x 8 GPUs, this box "
                                         "has 1 GPU(s) in one node; run it on the box with --cluster"),
                       InputError);
  // Malformed measurements and a missing cluster file name file, line and key.
  CHECK_THROWS_WITH_AS(parse_measurements("format: tagcsim-box-measurements/1\ncommand: x\nquick: false\n", "m.yaml"),
                       doctest::Contains("m.yaml:1: missing required key 'box'"), InputError);
  std::ofstream(dir / "s.yaml") << "name: s\nmodel: gpt2-124m\ncluster: {file: nowhere.yaml}\npolicies: [fsdp]\n";
  CHECK_THROWS_WITH_AS(scenarios::load_scenario((dir / "s.yaml").string()),
                       doctest::Contains("s.yaml:3: cluster.file: no such cluster file 'nowhere.yaml'"), InputError);
  fs::remove_all(dir);
}

TEST_CASE("bad input on the command line: no GPU and an unwritable folder exit 2 with one line") {
  std::string why;
  if (calibrate::box::visible_gpus(why) > 0) {
    MESSAGE("SKIPPED: this machine has a GPU; the no-GPU error cannot be shown here");
    return;
  }
  auto run = [](const std::string& args) {
    const auto o = run_command(std::string(TAGCSIM_BINARY) + " " + args);
    return std::make_pair(o.code, o.output);
  };
  const auto dir = temp_dir("cli");
  auto [rc, out] = run("calibrate box --quick --out " + (dir / "out").string());
  CHECK(rc == 2);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(out.find("calibrate box: no GPU to measure: ") != std::string::npos);
  std::tie(rc, out) = run("calibrate box --out /proc/tagcsim-nope");
  CHECK(rc == 2);
  CHECK(out.find("--out: cannot create the output folder '/proc/tagcsim-nope'") != std::string::npos);
  std::tie(rc, out) = run("calibrate check scenarios/quickstart.yaml --policies fsdp --out " + (dir / "c").string());
  CHECK(rc == 2);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(out.find("calibrate check: no GPU to run the step on: ") != std::string::npos);
  std::tie(rc, out) = run("calibrate check scenarios/quickstart.yaml --policies nope --dry-run");
  CHECK(rc == 2);
  CHECK(out.find("--policies: 'nope' is not a policy of scenarios/quickstart.yaml (it has: fsdp, tagc, tagc-batched)") !=
        std::string::npos);
  std::tie(rc, out) = run("calibrate box --dry-run --gpus 0,1");
  CHECK(rc == 0);
  CHECK(out.find("GPUs: 0,1 (2)") != std::string::npos);
  fs::remove_all(dir);
}
