// Calibration: parsing nccl-tests output, fitting the collective model, the published tables.
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

using namespace tagcsim;
using namespace tagcsim::calibrate;
using sim::CollectiveOp;

namespace {

// The default data path: the tables shipped in the repository (validation/data/), nothing outside it.
const std::string kPublished = default_published_path();

// Two hosts x two GPUs, as nccl-tests >= 2.13 prints it (trimmed).
const char* kLog = R"(# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1001 on     node-a device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1002 on     node-a device  1 [0x0a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  2001 on     node-b device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  2002 on     node-b device  1 [0x0a] NVIDIA H100 80GB HBM3
node-a:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024            64     float    none      -1    20.50    0.05    0.04      0    19.80    0.05    0.04      0
        2048           128     float    none      -1    21.00    0.10    0.07      0    21.40    0.10    0.07      0
        4096           256     float    none      -1    22.00    0.19    0.14      0    22.10    0.19    0.14      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.08
)";

// A cluster built by hand: NVLink 450 GB/s per GPU, 4 x 50 GB/s NICs per node, one switch.
topologies::Cluster hand_cluster() {
  topologies::Cluster c;
  c.name = "hand";
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.intra = {.kind = "nvswitch", .bandwidth = 450e9, .latency = 0.5e-6, .efficiency = 0.7};
  c.nics = {.count = 4, .bandwidth = 50e9, .latency = 1.5e-6, .efficiency = 0.9};
  c.fabric = {.kind = topologies::Fabric::Kind::SingleSwitch, .switch_latency = 0.3e-6};
  c.collectives = {.step_latency_intra = 0.6e-6, .step_latency_inter = 2e-6, .launch_latency = 5e-6};
  return c;
}

// The model's own times for `op` over sizes 8 B .. 8 GiB on nodes x gpn.
std::vector<Point> synthetic(const topologies::Cluster& c, CollectiveOp op, int nodes, int gpn) {
  std::vector<Point> out;
  for (double s = 8; s <= 8.6e9; s *= 4) {
    Point p;
    p.op_name = sim::to_string(op);
    p.op = op;
    p.nodes = nodes;
    p.gpus_per_node = gpn;
    p.bytes = s;
    const auto cc = cluster_for(c, p);
    p.time_s = sim::plan_collective(cc, op, s, sim::whole_cluster(cc)).seconds();
    p.where = fmt::format("synthetic {}x{} {}", nodes, gpn, s);
    out.push_back(p);
  }
  return out;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("an nccl-tests log becomes points: collective, layout, bytes, the faster placement") {
  const auto pts = parse_nccl_tests(kLog, "ag.log");
  REQUIRE(pts.size() == 3);
  CHECK(pts[0].op == CollectiveOp::AllGather);
  CHECK(pts[0].op_name == "all_gather");
  CHECK(pts[0].nodes == 2);
  CHECK(pts[0].gpus_per_node == 2);
  CHECK(pts[0].bytes == 1024);
  CHECK(pts[0].time_s == doctest::Approx(19.80e-6));  // in-place was faster
  CHECK(pts[1].time_s == doctest::Approx(21.00e-6));  // out-of-place was faster
  CHECK(pts[2].busbw == doctest::Approx(0.14e9));
  CHECK(pts[2].where == "ag.log:17");
}

TEST_CASE("old-format logs: the collective comes from the file name or --op, the layout from flags") {
  // nccl-tests 2.0: no redop/root columns, no rank lines, an 'error' column of float errors.
  const std::string old = "#  size count type time algbw busbw error time algbw busbw error\n"
                          "  1048576 262144 float 50.0 20.97 36.70 5e-07 49.0 21.40 37.45 5e-07\n";
  auto pts = parse_nccl_tests(old, "logs/reduce_scatter_perf.txt", {.op = "", .nodes = 1, .gpus_per_node = 8});
  REQUIRE(pts.size() == 1);
  CHECK(pts[0].op == CollectiveOp::ReduceScatter);
  CHECK(pts[0].ranks() == 8);
  CHECK(pts[0].time_s == doctest::Approx(49e-6));
  pts = parse_nccl_tests(old, "run1.txt", {.op = "alltoall", .nodes = 2, .gpus_per_node = 4});
  CHECK(pts[0].op_name == "alltoall");
  CHECK_FALSE(pts[0].op.has_value());  // parsed, but the model has no all-to-all
  CHECK(error_of([&] { parse_nccl_tests(old, "run1.txt"); }).find("pass --op") != std::string::npos);
  CHECK(error_of([&] { parse_nccl_tests(old, "all_reduce.txt"); }).find("--nodes") != std::string::npos);
}

TEST_CASE("bad nccl-tests input is an InputError naming file and line") {
  std::string log = kLog;
  auto with_row = [&](const std::string& from, const std::string& to) {
    std::string s = log;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK(error_of([&] { parse_nccl_tests(with_row("   19.80    0.05    0.04      0", "   19.80"), "x.log"); })
            .rfind("x.log:15: 10 columns", 0) == 0);
  CHECK(error_of([&] { parse_nccl_tests(with_row("21.00", "21.0x"), "x.log"); }).rfind("x.log:16: ", 0) == 0);
  CHECK(error_of([&] { parse_nccl_tests(with_row("22.00    0.19    0.14      0", "22.00    0.19    0.14      3"),
                                        "x.log"); })
            .find("x.log:17: nccl-tests reported 3 wrong results") != std::string::npos);
  CHECK(error_of([&] { parse_nccl_tests("# only comments\n", "empty.log"); }) ==
        "empty.log: no nccl-tests result rows found");
  CHECK(error_of([&] { load_nccl_tests_file("/nonexistent/x.log"); }) == "/nonexistent/x.log: cannot open file");
  CHECK(error_of([&] { parse_nccl_tests(kLog, "x.log", {.op = "all_reduce"}); }).find("x.log:2: the log says") == 0);
}

TEST_CASE("the fit recovers the model's own parameters from a synthetic sweep") {
  auto truth = hand_cluster();
  truth.collectives = {.step_latency_intra = 3e-6, .step_latency_inter = 12e-6, .launch_latency = 9e-6};
  truth.intra.efficiency = 0.8;
  truth.nics.efficiency = 0.85;
  // Several rank counts inside a node separate launch from per-step latency; two node counts
  // separate the network steps; big buffers pin the NVLink and NIC efficiencies.
  std::vector<Point> pts;
  for (int g : {2, 4, 8}) {
    auto s = synthetic(truth, CollectiveOp::AllGather, 1, g);
    pts.insert(pts.end(), s.begin(), s.end());
  }
  for (int n : {2, 4}) {
    auto s = synthetic(truth, CollectiveOp::ReduceScatter, n, 8);
    pts.insert(pts.end(), s.begin(), s.end());
  }
  const auto r = fit(pts, hand_cluster());
  CHECK(r.converged);
  for (const auto& p : r.params) CHECK_MESSAGE(p.status == ParamFit::Status::Fitted, param_key(p.param));
  CHECK(r.cluster.collectives.launch_latency == doctest::Approx(9e-6).epsilon(1e-6));
  CHECK(r.cluster.collectives.step_latency_intra == doctest::Approx(3e-6).epsilon(1e-6));
  CHECK(r.cluster.collectives.step_latency_inter == doctest::Approx(12e-6).epsilon(1e-6));
  CHECK(r.cluster.intra.efficiency == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(r.cluster.nics.efficiency == doctest::Approx(0.85).epsilon(1e-6));
  CHECK(r.error.max_abs < 1e-9);
}

TEST_CASE("one sweep of one rank count: launch latency is held, the step latency and efficiency fitted") {
  auto truth = hand_cluster();  // launch 5 us, as the base
  truth.collectives.step_latency_intra = 3e-6;
  truth.intra.efficiency = 0.8;
  const auto r = fit(synthetic(truth, CollectiveOp::AllReduce, 1, 8), hand_cluster());
  CHECK(r.params[int(Param::LaunchLatency)].status == ParamFit::Status::Held);
  CHECK(r.params[int(Param::StepLatencyInter)].status == ParamFit::Status::Held);  // one node: no network step
  CHECK(r.params[int(Param::NicEfficiency)].status == ParamFit::Status::Held);
  CHECK(r.cluster.collectives.step_latency_intra == doctest::Approx(3e-6).epsilon(1e-6));
  CHECK(r.cluster.intra.efficiency == doctest::Approx(0.8).epsilon(1e-6));
  // --hold keeps a parameter at the base whatever the data says.
  FitOptions o;
  o.hold = {parse_param("intra_node.efficiency", "--hold")};
  const auto held = fit(synthetic(truth, CollectiveOp::AllReduce, 1, 8), hand_cluster(), o);
  CHECK(held.cluster.intra.efficiency == 0.7);
  CHECK(held.params[int(Param::IntraEfficiency)].why == "on request (--hold)");
  CHECK(error_of([] { parse_param("efficiency", "--hold"); }).find("unknown parameter 'efficiency'") !=
        std::string::npos);
}

TEST_CASE("data faster than the link allows holds the efficiency at 1 and says so") {
  auto fast = hand_cluster();
  fast.intra.bandwidth = 600e9;  // the data comes from a faster link than the base describes
  fast.intra.efficiency = 1.0;
  const auto r = fit(synthetic(fast, CollectiveOp::AllGather, 1, 8), hand_cluster());
  const auto& e = r.params[int(Param::IntraEfficiency)];
  CHECK(e.status == ParamFit::Status::AtBound);
  CHECK(e.value == 1.0);
  CHECK(e.why.find("> 1") != std::string::npos);
}

TEST_CASE("a profile reads back as the fitted cluster") {
  auto truth = hand_cluster();
  truth.collectives.step_latency_intra = 2.5e-6;
  truth.intra.efficiency = 0.75;
  auto base = topologies::preset("dgx-h100-ib400");
  base.nodes = 1;
  const auto r = fit(synthetic(truth, CollectiveOp::AllGather, 1, 8), base);
  const std::string text = profile_yaml(r, {.command = "tagcsim calibrate ...", .data = {"synthetic"},
                                            .base_cluster = "{preset: dgx-h100-ib400, nodes: 1}"});
  CHECK(text.find("# Produced by:\n#   tagcsim calibrate ...") != std::string::npos);
  CHECK(text.find("launch_latency: ") == std::string::npos);  // held: not an override
  const auto back = topologies::load_cluster(Input::load_string(text, "profile.yaml")["cluster"]);
  CHECK(back.name == "dgx-h100-ib400");
  CHECK(back.nodes == 1);
  CHECK(back.intra.efficiency == doctest::Approx(r.cluster.intra.efficiency).epsilon(1e-4));
  CHECK(back.collectives.step_latency_intra == doctest::Approx(r.cluster.collectives.step_latency_intra).epsilon(1e-3));
  CHECK(back.collectives.launch_latency == base.collectives.launch_latency);
}

TEST_CASE("the published nccl tables load, grouped per benchmark run") {
  CHECK(kPublished == std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/published_measurements.yaml");
  const auto groups = load_published(kPublished);
  REQUIRE(groups.size() == 6);
  CHECK(groups[0].name == "nccl-a100-1n-mleng-allreduce");
  CHECK(groups[0].points.size() == 20);
  CHECK(groups[0].points[0].op == CollectiveOp::AllReduce);
  CHECK(groups[0].points[0].time_s == doctest::Approx(43.83e-6));
  CHECK(published_base_cluster(groups[0]) == "{preset: dgx-a100-ib200, nodes: 1}");
  const auto& h200 = groups.back();  // a GPU-count sweep of bus bandwidths only
  CHECK(h200.name == "nccl-h200-mleng-allreduce-8GiB");
  CHECK(h200.points.size() == 5);
  CHECK(h200.points[0].time_derived);
  CHECK(h200.points[0].busbw == doctest::Approx(363.3e9));
  CHECK(error_of([] { load_published("/nonexistent/pm.yaml"); }).find("published measurements not found") !=
        std::string::npos);
}

TEST_CASE("fitting the published sweeps: residuals as measured") {
  const auto groups = load_published(kPublished);
  auto fit_group = [&](const std::string& name) {
    for (const auto& g : groups)
      if (g.name == name) return fit(g.points, load_cluster_arg(published_base_cluster(g)));
    FAIL("no group " << name);
    return FitResult{};
  };
  // 8x A100 NVLink3 all_reduce, 32 KiB .. 16 GiB. The model has no protocol switching, so the
  // 1-32 MiB middle is worst (measured max 36.2% at 1 MiB, mean 15.4%).
  const auto a100 = fit_group("nccl-a100-1n-mleng-allreduce");
  CHECK(a100.error.points == 20);
  CHECK(a100.error.max_abs < 0.37);
  CHECK(a100.error.mean_abs < 0.16);
  CHECK(a100.cluster.intra.efficiency == doctest::Approx(0.702).epsilon(0.01));
  CHECK(a100.cluster.collectives.step_latency_intra == doctest::Approx(3.16e-6).epsilon(0.01));
  // 4..8x H200 NVLink4, ring (NVLS off), 8 GiB: the NVLink efficiency, within 0.4%.
  const auto h200 = fit_group("nccl-h200-mleng-allreduce-8GiB");
  CHECK(h200.cluster.intra.efficiency == doctest::Approx(0.811).epsilon(0.005));
  CHECK(h200.error.max_abs < 0.005);
  // 2x8 A100 over EFA: NCCL's tree at 2 nodes sends S per node (the ring ~2S), so the fitted
  // NIC efficiency is a physical 0.69 of 400 Gb/s, and the 80 us of a 2-node step latency shows.
  const auto p4de = fit_group("nccl-a100-2n-aws-p4de-efa-allreduce");
  CHECK(p4de.params[int(Param::NicEfficiency)].status == ParamFit::Status::Fitted);
  CHECK(p4de.cluster.nics.efficiency == doctest::Approx(0.6905).epsilon(0.01));
  CHECK(p4de.cluster.collectives.step_latency_inter == doctest::Approx(76.08e-6).epsilon(0.01));
  CHECK(p4de.error.max_abs < 0.45);
}
