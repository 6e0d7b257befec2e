// Calibration: parsing nccl-tests output, fitting the collective model, the published tables.
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

// The default data path: the tables shipped in the repository (validation/data/), nothing outside it.
const std::string kPublished = default_published_path();

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
  CHECK(pts[0].nccl_version == 21903);  // "nccl-library=21903": NCCL 2.19.3, whose tuning table then applies
  // Older logs print "NCCL version 2.18.5+cuda12.2" on an INFO line instead.
  CHECK(parse_nccl_version("NCCL version 2.18.5+cuda12.2") == 21805);
  CHECK(parse_nccl_version("nccl 2.27.7") == 22707);
  CHECK(parse_nccl_version("not stated") == 0);
  CHECK(parse_nccl_version("CUDA 12.6.3") == 0);  // a triple that is not NCCL 2.x
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

TEST_CASE("the published nccl tables load, grouped per benchmark run") {
  CHECK(kPublished == std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/published_measurements.yaml");
  const auto groups = load_published(kPublished);
  // 29 fitted, the rest validated only: GB200 and GB300 NVL72 racks, Azure's GB200 VM, CSCS's Alps,
  // five all-to-alls, a shared host's 4-GPU all-gather, reduce-scatter and all-reduce (S97), and OCI's two
  // racks of GB200 with NVLS off at every size (S99), S42's H200 node rerun under NCCL 2.26.2 (S100), and a
  // quiet 8-GPU H100 node's ring all-gather, reduce-scatter and all-reduce and its NVLS all-reduce (S101).
  REQUIRE(groups.size() == 60);
  auto named = [&](const std::string& name) -> const PublishedGroup& {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.name == name; });
    REQUIRE(it != groups.end());
    return *it;
  };
  CHECK(groups[0].name == "nccl-a100-1n-mleng-allreduce");
  CHECK(groups[0].source_key == "S01");
  CHECK(groups[0].points.size() == 20);
  CHECK(groups[0].points[0].op == CollectiveOp::AllReduce);
  CHECK(groups[0].points[0].time_s == doctest::Approx(43.83e-6));
  CHECK(groups[0].points[0].gpus_per_process == 8);  // -g 8: one process drives the node
  CHECK(groups[1].points[0].gpus_per_process == 1);
  CHECK(published_base_cluster(groups[0]) == "{preset: dgx-a100-ib200, nodes: 1}");
  // The H200 GPU-count sweep published bus bandwidths with and without NVLink SHARP: two tables.
  const auto& h200 = groups[5];
  CHECK(h200.name == "nccl-h200-mleng-allreduce-8GiB");
  CHECK(h200.points.size() == 5);
  CHECK(h200.points[0].time_derived);
  CHECK(h200.points[0].busbw == doctest::Approx(363.3e9));
  CHECK(h200.points[0].algos == 0);
  const auto& off = groups[6];
  CHECK(off.name == "nccl-h200-mleng-allreduce-8GiB-nvls-off");
  CHECK(off.points[4].busbw == doctest::Approx(365.6e9));
  CHECK(off.points[4].algos == (topologies::NcclPins::Ring | topologies::NcclPins::Tree));
  CHECK(published_base_cluster(h200) == "{preset: dgx-h200-ib400, nodes: 1}");
  CHECK(h200.points[0].nccl_version == 22707);  // "nccl 2.27.7" in hardware.software
  // The only reduce-scatter table: 4 GPUs of one H100 node in one process (-g 4), NCCL 2.29.2, not fitted.
  const auto& rs = named("nccl-h100-1n4-quiet-reducescatter");
  CHECK(rs.source_key == "S97");
  CHECK(rs.points.size() == 28);
  CHECK(rs.points[0].op == CollectiveOp::ReduceScatter);
  CHECK(rs.points[0].ranks() == 4);
  CHECK(rs.points[0].gpus_per_process == 4);
  CHECK(rs.points[0].nccl_version == 22902);
  CHECK(rs.points.back().time_s == doctest::Approx(18359.1e-6));  // 8 GiB: the faster of out-of-place and in-place
  CHECK(!rs.not_fitted.empty());
  CHECK(published_base_cluster(rs) == "{preset: dgx-h100-ib400, nodes: 1}");
  // The Azure tables: one process for 8 GPUs, NVLS pinned (NCCL_ALGO=NVLS), their NCCL release, their VM.
  const auto& ndv5 = groups[8];
  CHECK(ndv5.name == "nccl-h100-1n-azure-ndv5-allreduce");
  CHECK(ndv5.source_key == "S41");
  CHECK(ndv5.points.size() == 24);
  CHECK(ndv5.points[0].bytes == 1024);
  CHECK(ndv5.points[0].gpus_per_process == 8);
  CHECK(ndv5.points[0].algos == topologies::NcclPins::Nvls);
  CHECK(ndv5.points[0].nccl_version == 21805);
  CHECK(ndv5.points[0].time_s == doctest::Approx(1.75 * 1024 / 0.07e9));  // from busbw 0.07 GB/s
  CHECK(published_base_cluster(ndv5) == "{preset: azure-nd-h100-v5, nodes: 1}");
  // Azure's ND GB200 v6: one VM is 4 GPUs of an NVL72 rack; the script pins NCCL_ALGO=Ring on 4 GPUs.
  const auto& gb200 = named("nccl-gb200-1n4-azure-ndgb200v6-allreduce");
  CHECK(gb200.name == "nccl-gb200-1n4-azure-ndgb200v6-allreduce");
  CHECK(gb200.points.size() == 24);
  CHECK(gb200.points[0].gpus_per_process == 4);
  CHECK(gb200.points[0].algos == topologies::NcclPins::Ring);
  CHECK(gb200.points[0].nccl_version == 22501);
  CHECK(gb200.points.back().time_s == doctest::Approx(1.5 * 8589934592.0 / 679.61e9));  // 2 (4-1)/4 x S / busbw
  CHECK(!gb200.not_fitted.empty());
  CHECK(published_base_cluster(gb200) == "{preset: gb200-nvl72, nodes: 1, gpus_per_node: 4}");
  // OCI's GB300 and GB200 racks: a table gives the GPUs of each rack it used; RoCE between racks.
  const auto& gb300 = named("nccl-gb300-nvl72-2r-oci-allreduce");
  CHECK(gb300.source_key == "S81");
  CHECK(gb300.nodes == 2);
  CHECK(gb300.points[0].gpus_per_node == 64);
  CHECK(gb300.points[0].nccl_version == 22807);
  CHECK(gb300.points[1].time_s == doctest::Approx(46070e-6));  // 16 GiB, the faster placement (in place)
  CHECK(!gb300.not_fitted.empty());
  CHECK(published_base_cluster(gb300) == "{preset: gb300-nvl72, nodes: 2, nics: {transport: roce}}");
  const auto& gb200_tray = named("nccl-gb200-nvl72-4gpu-oci-allreduce");
  CHECK(gb200_tray.source_key == "S82");
  CHECK(gb200_tray.points[0].gpus_per_process == 4);  // the page's -g 4 on one tray
  CHECK(published_base_cluster(gb200_tray) == "{preset: gb200-nvl72, nodes: 1, nics: {transport: roce}}");
  // GCP a3-mega over TCPXO: Google's profile pins NCCL_ALGO=Ring,Tree and NCCL_PROTO=Simple.
  const auto& tcpxo = groups[10];
  CHECK(tcpxo.name == "nccl-h100-2n-gcp-a3mega-tcpxo-allreduce");
  CHECK(tcpxo.points[0].algos == (topologies::NcclPins::Ring | topologies::NcclPins::Tree));
  CHECK(tcpxo.points[0].protos == topologies::NcclPins::Simple);
  CHECK(tcpxo.points[0].nccl_version == 22105);
  CHECK(tcpxo.points[0].time_s == doctest::Approx(123.5e-6));  // the faster placement
  CHECK(published_base_cluster(tcpxo) == "{preset: gcp-a3-mega, nodes: 2}");
  CHECK(published_base_cluster(groups[12]) == "{preset: gcp-a3-high, nodes: 2}");
  CHECK(groups[12].points[0].op == CollectiveOp::AllGather);
  // The GKE a3-mega report (NCCL 2.28.7): its TCPXO profile leaves NCCL_ALGO unset and allows LL128,
  // which overrides the preset's older pins; its one-node all-reduce ran with NCCL's defaults (NVLS).
  const auto& gke = groups[14];
  CHECK(gke.name == "nccl-h100-2n-gcp-a3mega-tcpxo-mgcafe-allgather");
  CHECK(gke.source_key == "S48");
  CHECK(gke.points.size() == 13);
  CHECK(gke.points[0].protos == (topologies::NcclPins::Simple | topologies::NcclPins::LL128));
  CHECK((gke.points[0].algos & topologies::NcclPins::NvlsTree) != 0);
  CHECK(gke.points[0].nccl_version == 22807);
  CHECK(gke.points[0].time_s == doctest::Approx(110.0e-6));
  CHECK(groups[15].name == "nccl-h100-1n-gcp-a3mega-mgcafe-allreduce");
  CHECK(published_base_cluster(groups[15]) == "{preset: gcp-a3-mega, nodes: 1}");
  // CoreWeave's and OCI's GB200 NVL72 tables: validated on the NVL72 preset (a rack is a node), never fitted.
  int racks = 0;
  for (const auto& g : groups) {
    if (g.name.rfind("nccl-gb200-nvl72-", 0) != 0 || g.collective == "alltoall") {
      CHECK(g.not_fitted.empty() == (g.name != "nccl-gb200-1n4-azure-ndgb200v6-allreduce" &&
                                     g.name != "nccl-gh200-2n-cscs-alps-slingshot-allreduce" &&
                                     g.name.rfind("nccl-gb300-nvl72-", 0) != 0 && g.collective != "alltoall" &&
                                     g.source_key != "S97" && g.source_key != "S100" &&
                                     g.source_key != "S101"));
      continue;
    }
    CAPTURE(g.name);
    CHECK(g.not_fitted.find("Validated, held out of every fit") != std::string::npos);
    const bool oci = g.name.find("-oci-") != std::string::npos;
    CHECK(published_base_cluster(g) ==
          fmt::format("{{preset: gb200-nvl72, nodes: {}{}}}", g.nodes, oci ? ", nics: {transport: roce}" : ""));
    racks += g.nodes;
  }
  CHECK(racks == 1 + 2 + 20 + 1 + 1 + 2 + 3 + 2);  // CoreWeave's, then OCI's all-reduces
  // OCI's two racks at every size (S99): NVLS off, so NCCL chooses among its rings and trees.
  const auto& two_racks = named("nccl-gb200-nvl72-2r32h-oci-hpcoke-allreduce");
  CHECK(two_racks.source_key == "S99");
  CHECK(two_racks.points.size() == 32);  // 8 B to 32 GiB, the anomalous 1 GiB row left out
  CHECK(two_racks.points[0].algos == (topologies::NcclPins::Ring | topologies::NcclPins::Tree));
  CHECK(two_racks.points[0].nccl_version == 22902);
  CHECK(two_racks.points[0].time_s == doctest::Approx(183.82e-6));
  // OCI's all-to-alls on GB200 racks: a rack is a node (one NVLink domain), never fitted.
  const auto& a2a = named("nccl-gb200-nvl72-2r64g-oci-alltoall");
  CHECK(a2a.points[0].op == CollectiveOp::AllToAll);
  CHECK(a2a.points[0].ranks() == 128);
  CHECK(a2a.points[0].time_s == doctest::Approx(48071e-6));  // the faster of the two placements
  CHECK(a2a.not_fitted.find("an all-to-all") == 0);
  CHECK(published_base_cluster(a2a) == "{preset: gb200-nvl72, nodes: 2}");
  // CSCS's Alps table: named by its machine, run on its preset with CSCS's NCCL_PROTO=^LL128.
  const auto& alps = named("nccl-gh200-2n-cscs-alps-slingshot-allreduce");
  CHECK(alps.source_key == "S69");
  CHECK(alps.points.size() == 25);
  CHECK(published_base_cluster(alps) == "{preset: alps-gh200, nodes: 2}");
  CHECK(alps.points[0].protos == (topologies::NcclPins::LL | topologies::NcclPins::Simple));
  CHECK(alps.points[0].time_s == doctest::Approx(17.72e-6));  // min(out of place, in place)
  CHECK(alps.points[0].nccl_version == 0);  // "nccl-tests 2.17.1" names the benchmark's release, not NCCL's
  CHECK(error_of([] { load_published("/nonexistent/pm.yaml"); }).find("published measurements not found") !=
        std::string::npos);
}

TEST_CASE("fitting every published table at once, from the priors: the presets' values, as measured") {
  const auto groups = load_published(kPublished);
  std::vector<Sample> samples;
  for (const auto& g : groups) {
    if (!g.not_fitted.empty()) continue;  // as `calibrate published --all`: validated, never fitted
    const auto c = with_priors(load_cluster_arg(published_base_cluster(g)));
    for (const auto& p : g.points) samples.push_back({p, c, g.name});
  }
  REQUIRE(samples.size() == 601);
  FitOptions o;
  o.prior_weight = kPriorWeight;  // as `tagcsim calibrate published --all --priors`
  const auto r = fit(samples, o);
  auto value = [&](const std::string& name) {
    for (const auto& f : r.params)
      if (f.id.name() == name) return f.value;
    FAIL("no parameter " << name);
    return 0.0;
  };
  // As written to calibrate/profiles/nccl-model.yaml and transport-efa.yaml, and carried by the presets.
  CHECK(value("intra_node.efficiency@nvlink3") == doctest::Approx(topologies::preset("dgx-a100-ib200").intra.efficiency).epsilon(2e-3));
  CHECK(value("intra_node.efficiency@nvlink4") == doctest::Approx(topologies::preset("dgx-h100-ib400").intra.efficiency).epsilon(2e-3));
  CHECK(value("intra_node.nvls_efficiency@nvlink4") ==
        doctest::Approx(topologies::preset("dgx-h100-ib400").intra.nvls_efficiency).epsilon(2e-3));
  // What NCCL's tuner leaves out: the single-node Simple slice flag, per NVLink generation (the A100
  // rings set NVLink3's; no NVLink4 point moves with it, so it keeps its prior, 0), and LL128 on A100's NVLink.
  CHECK(value("collectives.slice_latency@nvlink3") ==
        doctest::Approx(topologies::preset("dgx-a100-ib200").collectives.slice_latency).epsilon(1e-2));
  CHECK(value("collectives.slice_latency@nvlink3") > 4e-6);
  CHECK(value("collectives.slice_latency@nvlink4") == 0);
  CHECK(topologies::preset("dgx-h100-ib400").collectives.slice_latency == 0);
  CHECK(topologies::preset("gb200-nvl72").collectives.slice_latency == 0);
  CHECK(value("intra_node.ll128_efficiency@nvlink3") ==
        doctest::Approx(topologies::preset("dgx-a100-ib200").intra.ll128_efficiency).epsilon(2e-3));
  CHECK(value("nics.transport.latency@efa") == doctest::Approx(topologies::preset("aws-p5").nics.transport.latency).epsilon(1e-2));
  CHECK(value("nics.efficiency@tcpxo") == doctest::Approx(topologies::preset("gcp-a3-mega").nics.efficiency).epsilon(2e-3));
  CHECK(value("nics.efficiency@tcpx") == doctest::Approx(topologies::preset("gcp-a3-high").nics.efficiency).epsilon(2e-3));
  // B200's NVLink5, from the GCP A4 and Lambda tables (two-node runs, bound by their NICs above 64 MiB),
  // and its step latency: both B200 tables with small sizes run ~7 us over the H100 clusters' there.
  CHECK(value("intra_node.efficiency@nvlink5") == doctest::Approx(topologies::preset("dgx-b200-ib400").intra.efficiency).epsilon(2e-3));
  CHECK(value("intra_node.step_latency@nvlink5") == doctest::Approx(topologies::preset("gcp-a4-high").intra.step_latency).epsilon(1e-2));
  CHECK(value("intra_node.step_latency@nvlink5") > 0.5e-6);
  CHECK(value("intra_node.step_latency@nvlink4") < 0.05e-6);
  // The host's launch costs, per host CPU (AMD: the A100 boxes; Intel: the Azure H100/H200 VMs).
  CHECK(value("collectives.host_launch_per_channel@amd") ==
        doctest::Approx(topologies::preset("aws-p5").collectives.host_launch_per_channel).epsilon(1e-2));
  CHECK(value("collectives.host_launch@intel") ==
        doctest::Approx(topologies::preset("azure-nd-h100-v5").collectives.host_launch).epsilon(1e-2));
  // A transport's per-message costs come only from latency-bound points: below 1 MiB, or under a
  // quarter of the line rate. TCPX's tables start at 1 and 8 MiB, but take ~1 ms up to 8 MiB (1-10
  // GB/s of 100): its latency is fitted. EFA's tables have no such point that a per-step overhead moves.
  for (const auto& f : r.params) {
    if (f.id.name() == "nics.transport.latency@tcpx") {
      CHECK(f.status != ParamFit::Status::Held);  // fitted, or at its 300 us bound
      CHECK(f.value > 100e-6);
    }
    if (f.id.name() == "nics.transport.overhead@efa") {
      CHECK(f.status == ParamFit::Status::Held);
      CHECK(f.why.find("latency-bound (< 1 MiB, or < 25% of the line rate)") != std::string::npos);
    }
  }
  // InfiniBand, from the tables at 2-8 nodes: NVLS trees and rings reach ~0.82 of the NICs' line rate.
  CHECK(value("nics.efficiency@ib") == doctest::Approx(0.8322).epsilon(2e-3));
  // Residuals as measured (docs/calibration.md): in-sample, per size band.
  CHECK(summarize(r.points, size_bands()[4]).median_abs < 0.055);  // >= 1 MiB: 5.0%
  CHECK(summarize(r.points, size_bands()[3]).median_abs < 0.12);   // 32 KiB-1 MiB: 11.2%
  CHECK(summarize(r.points, size_bands()[4]).p90_abs < 0.20);      // >= 1 MiB: 18.4%
}

TEST_CASE("priors: NCCL's own rates and latency tables, never the shipped tables' fits") {
  // NCCL's per-link NVLink rates (topo.h), the maintainers' NVLS figure, no step latency of its own.
  const auto h100 = with_priors(topologies::preset("dgx-h100-ib400"));
  CHECK(h100.intra.efficiency == doctest::Approx(20.6 / 25));
  CHECK(h100.intra.nvls_efficiency == doctest::Approx(274.3 * 9 / 8 / 450));
  CHECK(h100.intra.step_latency == 0);
  CHECK(h100.nics.efficiency == doctest::Approx(0.97));  // 48.5 of 50 GB/s per ConnectX-7
  CHECK(h100.nics.transport.latency == 0);
  // NVLink5: 40.1 of 50 GB/s per link; NVLS as NVLink4's x NCCL's Blackwell / Hopper 0.74 / 0.85.
  const auto b200 = with_priors(topologies::preset("dgx-b200-ib400"));
  CHECK(b200.intra.efficiency == doctest::Approx(40.1 / 50));
  CHECK(b200.intra.nvls_efficiency == doctest::Approx(274.3 * 9 / 8 / 450 * 0.74 / 0.85));
  CHECK(b200.intra.step_latency == 0);
  CHECK(topologies::preset("dgx-b200-ib400").intra.step_latency > 0);  // the presets carry the fit
}
