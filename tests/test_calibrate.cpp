// Calibration: parsing nccl-tests output and fitting the collective model to it (the shipped tables:
// tests/test_calibrate_published.cpp).
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "nccl_log_testing.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

using namespace tagcsim;
using namespace tagcsim::calibrate;
using sim::CollectiveOp;

namespace {

// Two hosts x two GPUs, as nccl-tests >= 2.13 prints it (trimmed).
const char* kLog = kTwoByTwoAllGatherLog;

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
    p.time_s = sim::plan_collective(cc, op, s, group_for(p)).seconds();
    p.where = fmt::format("synthetic {}x{} {}", nodes, gpn, s);
    out.push_back(p);
  }
  return out;
}

// nccl-tests' header for two ranks on two hosts, each line after a launcher's `tag`.
std::string two_hosts(const std::string& tag = "") {
  return tag + "#  Rank  0 Group  0 Pid 1 on a device  0 [0x07] NVIDIA A100-SXM4-40GB\n" + tag +
         "#  Rank  1 Group  0 Pid 2 on b device  0 [0x07] NVIDIA A100-SXM4-40GB\n";
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
  CHECK(pts[0].nccl_version == 21903);  // "nccl-library=21903": NCCL 2.19.3, whose tuning table then applies
  // Older logs print "NCCL version 2.18.5+cuda12.2" on an INFO line instead.
  CHECK(parse_nccl_version("NCCL version 2.18.5+cuda12.2") == 21805);
  CHECK(parse_nccl_version("nccl 2.27.7") == 22707);
  CHECK(parse_nccl_version("not stated") == 0);
  CHECK(parse_nccl_version("CUDA 12.6.3") == 0);  // a triple that is not NCCL 2.x
}

TEST_CASE("an all-gather log's rows of 0 bytes (under one element a rank) are empty calls, skipped") {
  // all_gather_perf -b 4 on 16 ranks prints its first sizes as 0 bytes, 0 elements, then 256 B
  // (ALCF's Sophia logs, S106): those rows time a launch, not data.
  const std::string log =
      two_hosts() +
      "           0             0     float    none      -1     0.25    0.00    0.00      0     0.22    0.00    0.00      0\n"
      "         256             4     float    none      -1    37.29    0.01    0.01      0    36.23    0.01    0.01      0\n";
  const auto pts = parse_nccl_tests(log, "all_gather_output.dat.1");
  REQUIRE(pts.size() == 1);
  CHECK(pts[0].bytes == 256);
  CHECK(pts[0].time_s == doctest::Approx(36.23e-6));
  CHECK(pts[0].nodes == 2);
  // A 0 that is not nccl-tests' empty row (elements where there are no bytes) is still refused.
  const std::string elements_without_bytes =
      "           0             4     float    none      -1     0.25    0.00    0.00      0     0.22    0.00    0.00      0\n";
  CHECK(error_of([&] { parse_nccl_tests(log + elements_without_bytes, "all_gather_output.dat.1"); })
            .find("size is not a positive integer") != std::string::npos);
}

TEST_CASE("a log with launcher tags and NCCL INFO lines parses as its rows") {
  // mpirun --tag-output tags every write, so nccl-tests' rows, printed in pieces, carry the tag mid-line;
  // NCCL_DEBUG=INFO's ring lines end in numbers like a row's. Trimmed from S108's p5 log; srun --label
  // starts each line with the rank instead.
  const std::string tagged =
      two_hosts("[1,0]<stdout>:") +
      "[1,0]<stdout>:test-nccl-worker-0:25:66 [0] NCCL INFO Channel 00/16 :    0   7   6   5   4   3   2   1   9  10  11  12  13\n"
      "[1,0]<stdout>:test-nccl-worker-0:25:66 [0] NCCL INFO NCCL version 2.22.3+cuda12.2\n"
      "[1,0]<stdout>:           8             2     float     sum      -1[1,0]<stdout>:    85.70    0.00    0.00      0[1,0]<stdout>:"
      "    74.97    0.00    0.00      0\n";
  const auto pts = parse_nccl_tests(tagged, "p5.log", {.op = "all_reduce"});
  REQUIRE(pts.size() == 1);
  CHECK(pts[0].bytes == 8);
  CHECK(pts[0].time_s == doctest::Approx(74.97e-6));
  CHECK(pts[0].nodes == 2);
  CHECK(pts[0].nccl_version == 22203);
  const std::string labelled =
      two_hosts("0: ") +
      "0:      1048576        262144     float     sum      -1    50.00   20.97   20.97      0    49.00   21.40   21.40      0\n";
  const auto srun = parse_nccl_tests(labelled, "all_reduce_perf.out");
  REQUIRE(srun.size() == 1);
  CHECK(srun[0].time_s == doctest::Approx(49e-6));
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
  CHECK(pts[0].op == CollectiveOp::AllToAll);
  pts = parse_nccl_tests(old, "run1.txt", {.op = "sendrecv", .nodes = 2, .gpus_per_node = 4});
  CHECK(pts[0].op_name == "sendrecv");
  CHECK_FALSE(pts[0].op.has_value());  // parsed, but the model has no send/receive pair
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
  // A row whose size is mangled is still a row, not a line to skip: it would vanish from the fit.
  CHECK(error_of([&] { parse_nccl_tests(with_row("        4096           256", "        4O96           256"),
                                        "x.log"); })
            .rfind("x.log:17: size '4O96' is not a positive integer", 0) == 0);
  // algbw is size / time in every nccl-tests collective: 4096 B in 220 us is 0.0186 GB/s, not 0.19.
  CHECK(error_of([&] { parse_nccl_tests(with_row("22.00    0.19", "220.00    0.19"), "x.log"); })
            .rfind("x.log:17: time 220.00 us and algbw 0.19 GB/s disagree: 4096 bytes in 220.00 us is 0.0186 GB/s", 0) ==
        0);
  CHECK(error_of([&] { parse_nccl_tests("# only comments\n", "empty.log"); }) ==
        "empty.log: no nccl-tests result rows found");
  CHECK(error_of([&] { load_nccl_tests_file("/nonexistent/x.log"); }) == "/nonexistent/x.log: cannot open file");
  CHECK(error_of([&] { parse_nccl_tests(kLog, "x.log", {.op = "all_reduce"}); }).find("x.log:2: the log says") == 0);
}

TEST_CASE("size bands: median and 90th percentile of |error| per band") {
  std::vector<PointFit> pts;
  for (double e : {0.01, -0.02, 0.03, -0.04, 0.05, 0.06, -0.07, 0.08, 0.09, -0.50}) {
    PointFit f;
    f.used = true;
    f.point.bytes = 2 << 20;  // 2 MiB: the 1-64 MiB band
    f.error = e;
    pts.push_back(f);
  }
  pts.back().point.bytes = 1024;  // the -50% point is small
  const auto mid = summarize(pts, size_bands()[1]);
  CHECK(mid.points == 9);
  CHECK(mid.median_abs == doctest::Approx(0.05));
  CHECK(mid.p90_abs == doctest::Approx(0.09));  // nearest rank: the 9th of 9
  CHECK(summarize(pts, size_bands()[0]).median_abs == doctest::Approx(0.5));
  CHECK(summarize(pts).p90_abs == doctest::Approx(0.09));  // 9th of 10
  CHECK(summarize(pts).max_abs == doctest::Approx(0.5));
}

TEST_CASE("the fit recovers the model's own parameters from synthetic sweeps") {
  // The truth: a DGX H100 cluster with NCCL's latency table and known values of what is fitted.
  auto truth = topologies::preset("dgx-h100-ib400");
  truth.intra.efficiency = 0.80;
  truth.intra.nvls_efficiency = 0.70;
  truth.nics.transport.latency = 12e-6;
  truth.nics.efficiency = truth.nics.transport.efficiency = 0.90;
  truth.collectives.tree_depth = 2.0;
  // Channels that never bind (2 a NIC x 30 GB/s over 45): the NICs' efficiency shows.
  truth.collectives.net_channel_rate = 30e9;
  // Sweeps that make each one the bottleneck somewhere: one node of 4 (ring) and 8 (NVLS) GPUs,
  // and 2 and 4 nodes (trees and rings over InfiniBand).
  std::vector<Point> pts;
  for (auto [n, g] : {std::pair{1, 4}, std::pair{1, 8}, std::pair{2, 8}, std::pair{4, 8}}) {
    auto s = synthetic(truth, CollectiveOp::AllReduce, n, g);
    pts.insert(pts.end(), s.begin(), s.end());
  }
  auto start = truth;
  start.intra.efficiency = 0.75;
  start.intra.nvls_efficiency = 0.65;
  start.nics.transport.latency = 30e-6;
  start.nics.efficiency = start.nics.transport.efficiency = 0.95;
  start.collectives.tree_depth = 1.0;
  FitOptions o;  // fix what this data barely sees, to test the rest
  for (auto p : {Param::HostLaunch, Param::HostLaunchPerChannel, Param::RingDepth, Param::NvlsDepth,
                 Param::NvlsChunkOverhead, Param::TransportOverhead})
    o.hold.push_back(p);
  const auto r = fit(pts, start, o);
  auto value = [&](Param p) {
    for (const auto& f : r.params)
      if (f.id.param == p) return f.value;
    FAIL("no parameter " << param_key(p));
    return 0.0;
  };
  CHECK(value(Param::IntraEfficiency) == doctest::Approx(0.80).epsilon(0.01));
  CHECK(value(Param::NvlsEfficiency) == doctest::Approx(0.70).epsilon(0.01));
  CHECK(value(Param::NicEfficiency) == doctest::Approx(0.90).epsilon(0.01));
  CHECK(value(Param::TransportLatency) == doctest::Approx(12e-6).epsilon(0.05));
  CHECK(value(Param::TreeDepth) == doctest::Approx(2.0).epsilon(0.05));
  CHECK(r.error.median_abs < 0.005);
  // The fitted cluster carries the values, under their scopes.
  CHECK(r.clusters.front().intra.efficiency == doctest::Approx(value(Param::IntraEfficiency)));
  CHECK(r.params[0].id.name() == "collectives.launch_latency");
  bool scoped = false;
  for (const auto& f : r.params) scoped = scoped || f.id.name() == "nics.transport.latency@ib";
  CHECK(scoped);
}

TEST_CASE("a transport's latency is fitted from points under a quarter of the line rate, even above 1 MiB") {
  // A TCP-like transport: 150 us per network step. From 1 MiB up, a 2 x 8 all-gather runs far under
  // a quarter of 8 x 400 Gb/s until tens of MiB: those points are latency-bound and determine it.
  auto truth = topologies::preset("dgx-h100-ib400");
  truth.nics.transport.latency = 150e-6;
  std::vector<Point> from_1mib, from_1gib;
  for (const auto& p : synthetic(truth, CollectiveOp::AllGather, 2, 8)) {
    if (p.bytes >= (1 << 20)) from_1mib.push_back(p);
    if (p.bytes >= (1 << 30)) from_1gib.push_back(p);
  }
  auto start = truth;
  start.nics.transport.latency = 0;
  FitOptions o;
  for (auto p : {Param::HostLaunch, Param::HostLaunchPerChannel, Param::RingDepth, Param::TransportOverhead})
    o.hold.push_back(p);
  auto latency = [&](const FitResult& r) {
    for (const auto& f : r.params)
      if (f.id.param == Param::TransportLatency) return f;
    FAIL("no transport latency");
    return ParamFit{};
  };
  const auto fitted = latency(fit(from_1mib, start, o));
  CHECK(fitted.status == ParamFit::Status::Fitted);
  CHECK(fitted.value == doctest::Approx(150e-6).epsilon(0.05));
  // From 1 GiB up every point runs near the line rate: nothing determines the latency.
  const auto held = latency(fit(from_1gib, start, o));
  CHECK(held.status == ParamFit::Status::Held);
  CHECK(held.value == 0);
  CHECK(held.why.find("latency-bound (< 1 MiB, or < 25% of the line rate)") != std::string::npos);
}

TEST_CASE("a table on k of a node's GPUs is predicted on those GPUs' own NICs, not all of the node's") {
  // 10 DGX H100 nodes (8 GPUs, 8 x 400 Gb/s), nccl-tests on 1 or 4 GPUs of each (S111's runs).
  const auto dgx = topologies::preset("dgx-h100-ib400");
  const double S = double(1 << 30), nic = 50e9 * dgx.nics.efficiency;
  Point p;
  p.op_name = "all_gather";
  p.op = CollectiveOp::AllGather;
  p.nodes = 10;
  p.bytes = S;
  p.time_s = 1;
  p.gpus_per_node = 1;
  CHECK(cluster_for(dgx, p).gpus_per_node == 8);  // the node keeps its GPUs and their NICs
  const auto one = evaluate({p}, dgx).front();
  CHECK(one.plan.group.gpus_per_node == 1);
  CHECK(one.plan.rails == 1);
  // A 10-rank ring sends 9/10 of S out of each node, all through GPU 0's NIC.
  CHECK(one.plan.network_seconds == doctest::Approx(0.9 * S / nic));
  p.gpus_per_node = 4;
  const auto four = evaluate({p}, dgx).front();
  CHECK(four.plan.rails == 4);
  CHECK(four.plan.network_seconds == doctest::Approx(39.0 / 40 * S / (4 * nic)));
  // All eight GPUs: the whole node's eight NICs, as before.
  p.gpus_per_node = 8;
  CHECK(evaluate({p}, dgx).front().plan.rails == 8);
}

TEST_CASE("one node: no transport parameter, launch latency held, --hold honoured") {
  auto truth = topologies::preset("dgx-h100-ib400");
  truth.nodes = 1;
  truth.intra.efficiency = 0.8;
  const auto pts = synthetic(truth, CollectiveOp::AllGather, 1, 8);
  const auto r = fit(pts, topologies::preset("dgx-h100-ib400"));
  for (const auto& f : r.params) {
    CAPTURE(f.id.name());
    CHECK(f.id.param != Param::TransportLatency);
    CHECK(f.id.param != Param::NicEfficiency);
    if (f.id.param == Param::LaunchLatency) CHECK(f.status == ParamFit::Status::Held);
    if (f.id.param == Param::IntraEfficiency) CHECK(f.value == doctest::Approx(0.8).epsilon(0.01));
  }
  FitOptions o;
  o.hold = {parse_param("intra_node.efficiency", "--hold")};
  const auto held = fit(pts, topologies::preset("dgx-h100-ib400"), o);
  for (const auto& f : held.params)
    if (f.id.param == Param::IntraEfficiency) {
      CHECK(f.value == topologies::preset("dgx-h100-ib400").intra.efficiency);
      CHECK(f.why == "on request (--hold)");
    }
  CHECK(error_of([] { parse_param("efficiency", "--hold"); }).find("unknown parameter 'efficiency'") !=
        std::string::npos);
}

TEST_CASE("data faster than the link allows holds the efficiency at 1 and says so") {
  auto fast = topologies::preset("dgx-h100-ib400");
  fast.intra.bandwidth = 600e9;  // the data comes from a faster link than the base describes
  fast.intra.efficiency = 1.0;
  fast.intra.nvls_efficiency = 0;
  auto base = topologies::preset("dgx-h100-ib400");
  base.intra.nvls_efficiency = 0;
  const auto r = fit(synthetic(fast, CollectiveOp::AllGather, 1, 8), base);
  bool found = false;
  for (const auto& e : r.params)
    if (e.id.param == Param::IntraEfficiency) {
      found = true;
      CHECK(e.status == ParamFit::Status::AtBound);
      CHECK(e.value == 1.0);
      CHECK(e.why.find("above its physical range") != std::string::npos);
    }
  CHECK(found);
}

TEST_CASE("a profile reads back as the fitted cluster, and a transport profile as the transport") {
  auto truth = topologies::preset("aws-p5");
  truth.intra.efficiency = 0.79;
  truth.nics.transport.latency = 30e-6;
  std::vector<Point> pts = synthetic(truth, CollectiveOp::AllReduce, 2, 8);
  auto one = synthetic(truth, CollectiveOp::AllGather, 1, 8);
  pts.insert(pts.end(), one.begin(), one.end());
  const auto base = topologies::preset("aws-p5");
  const auto r = fit(pts, base);
  const Provenance how{.command = "tagcsim calibrate ...", .data = {"synthetic"}, .base_cluster = "aws-p5"};
  const std::string text = profile_yaml(r, how);
  CHECK(text.find("# Produced by:\n#   tagcsim calibrate ...") != std::string::npos);
  CHECK(text.find("launch_latency: ") == std::string::npos);  // held: not an override
  const auto back = topologies::load_cluster(Input::load_string(text, "profile.yaml")["cluster"]);
  CHECK(back.name == "aws-p5");
  CHECK(back.intra.efficiency == doctest::Approx(r.clusters.front().intra.efficiency).epsilon(1e-3));
  CHECK(back.nics.transport.latency == doctest::Approx(r.clusters.front().nics.transport.latency).epsilon(1e-3));
  const std::string tr = transport_yaml(r, how, base.nics.transport);
  const auto t = topologies::load_transport(Input::load_string(tr, "transport-efa.yaml")["transport"]);
  CHECK(t.name == "efa");
  CHECK(t.latency == doctest::Approx(r.clusters.front().nics.transport.latency).epsilon(1e-3));
  CHECK(error_of([&] { transport_yaml(r, how, topologies::load_transport(std::string("ib"))); })
            .find("no parameter of transport 'ib'") != std::string::npos);
}
