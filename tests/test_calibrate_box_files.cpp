// `tagcsim calibrate box`'s files, read back by the simulator's own loaders: a box is only worth
// measuring if what it writes drives a scenario (measurements.yaml's round trip, the device profile,
// the cluster file a scenario names). And every kind of bad input, in code and on the command line,
// stops with one line naming what to fix.
#include "box_testing.hpp"
#include "command_testing.hpp"
#include "calibrate/box/runtime.hpp"
#include "calibrate/box_fit.hpp"
#include "calibrate/check_compare.hpp"
#include "common/input.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster_yaml.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

using namespace tagcsim;
using namespace tagcsim::calibrate;
using namespace tagcsim::test;  // synthetic box measurements, rel
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  const auto p = fs::temp_directory_path() / fmt::format("tagcsim-box-{}-{}", name, ::getpid());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

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
  const std::string profile = read_text(dir / "device-h100-80gb-hbm3.yaml");
  const auto kp = sim::parse_kernel_profile(profile, "device.yaml");
  CHECK(kp.gpu == "H100-SXM5-80GB");
  CHECK(kp.family == "hopper");
  CHECK(kp.metadata.at("driver") == "580.159.03");
  CHECK(kp.gemm.points.size() == 2);  // bf16 only; the TF32 GEMM is in the header comment
  // Compute capability 9.0: PyTorch's fused torch._grouped_mm, said with where it comes from.
  CHECK(kp.gemm.grouped_mm == sim::KernelProfile::Gemm::GroupedMm::Fused);
  CHECK(profile.find("grouped_mm: {kernel: fused, source: ") != std::string::npos);
  CHECK(profile.find("compute capability 9.0 (cudaGetDeviceProperties)") != std::string::npos);
  auto ampere = f;  // the same box as if its GPUs were A100s: PyTorch's per-group fallback
  for (auto& g : ampere.measured.box.gpus) g.sm = 80;
  CHECK(sim::parse_kernel_profile(device_profile_yaml(ampere), "a.yaml").gemm.grouped_mm ==
        sim::KernelProfile::Gemm::GroupedMm::PerGroup);
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
  const std::string cluster_text = read_text(dir / "cluster-h100-80gb-hbm3-2gpu.yaml");
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

  const std::string report = read_text(dir / "report.txt");
  CHECK(report.find("== NCCL") != std::string::npos);
  CHECK(report.find("residuals: median |error|") != std::string::npos);
  CHECK(report.find("intra_node.efficiency@nvlink4") != std::string::npos);
  fs::remove_all(dir);
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
    const auto o = run_tagcsim(args);
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
  // Expert parallelism's all-to-alls sit inside the units' compute: the executor has no call for them.
  {
    std::ofstream f(dir / "ep.yaml");
    f << "model: qwen3-30b-a3b\ncluster: dgx-h100-ib400\ntraining: {framework: torchtitan, expert_parallel: 8}\n"
         "policies: [fsdp]\n";
  }
  std::tie(rc, out) = run("calibrate check " + (dir / "ep.yaml").string() + " --dry-run");
  CHECK(rc == 2);
  CHECK(out.find("calibrate check runs FSDP's own collectives only; tensor, context and expert parallelism's") !=
        std::string::npos);
  std::tie(rc, out) = run("tune " + (dir / "ep.yaml").string() + " --max-grad-error 0.1");
  CHECK(rc == 2);
  CHECK(out.find("tune searches gradient compression, which is not modelled with expert parallelism") !=
        std::string::npos);
  std::tie(rc, out) = run("calibrate box --dry-run --gpus 0,1");
  CHECK(rc == 0);
  CHECK(out.find("GPUs: 0,1 (2)") != std::string::npos);
  fs::remove_all(dir);
}
