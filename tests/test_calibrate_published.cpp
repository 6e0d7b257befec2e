// The shipped nccl-tests tables (validation/data/published_measurements.yaml): how they load, group
// and map to presets, and what fitting them all at once from NCCL's own priors gives.
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace tagcsim;
using namespace tagcsim::calibrate;
using doctest::Contains;
using sim::CollectiveOp;

namespace {

// The default data path: the tables shipped in the repository (validation/data/), nothing outside it.
const std::string kPublished = default_published_path();

}  // namespace

TEST_CASE("the published nccl tables load, grouped per benchmark run") {
  CHECK(kPublished == std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/published_measurements.yaml");
  const auto groups = load_published(kPublished);
  // 32 fitted (S111's one-node all-reduce, all-gather and reduce-scatter among them), the rest validated only: GB200 and GB300 NVL72 racks, Azure's GB200 VM, CSCS's Alps,
  // five all-to-alls, a shared host's 4-GPU all-gather, reduce-scatter and all-reduce (S97), and OCI's two
  // racks of GB200 with NVLS off at every size (S99), S42's H200 node rerun under NCCL 2.26.2 (S100), and a
  // quiet 8-GPU H100 node's ring all-gather, reduce-scatter and all-reduce and its NVLS all-reduce (S101), and
  // two DGX A100 nodes' all-gather and all-reduce over InfiniBand (S106), two p5s' all-reduce over EFA (S108)
  // two Perlmutter nodes' over Slingshot-11 (S109), CSCS's all-reduce on 2 to 512 Alps nodes (S110, nine), and
  // one H100 cluster's all-reduce, all-gather, reduce-scatter and all-to-all on one node (8 GPUs and 4) and
  // across ten nodes with 1, 2, 4 and 8 GPUs a node (S111, 24), and Google's example all-gathers on two A3
  // Ultra VMs over RoCE (S116) and two A3 Mega VMs over TCPXO (S117).
  REQUIRE(groups.size() == 99);
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
  // Google's own runs (S116, S117): the machine type names the preset; the A3 Mega one carries Google's pins and
  // the NCCL its plugin release ships.
  const auto& ultra = named("nccl-h200-2n-gcp-a3ultra-gib-allgather");
  CHECK(published_base_cluster(ultra) == "{preset: gcp-a3-ultra, nodes: 2}");
  CHECK(ultra.points.size() == 24);
  CHECK(ultra.points[0].time_s == doctest::Approx(54.07e-6));
  const auto& mega = named("nccl-h100-2n-gcp-a3mega-tcpxo-google-allgather");
  CHECK(published_base_cluster(mega) == "{preset: gcp-a3-mega, nodes: 2}");
  CHECK(mega.points.size() == 26);
  CHECK(mega.points[0].nccl_version == 22807);
  CHECK(mega.points[0].protos == (topologies::NcclPins::Simple | topologies::NcclPins::LL128));
  // CoreWeave's and OCI's GB200 NVL72 tables: validated on the NVL72 preset (a rack is a node), never fitted.
  int racks = 0;
  for (const auto& g : groups) {
    if (g.name.rfind("nccl-gb200-nvl72-", 0) != 0 || g.collective == "alltoall") {
      CHECK(g.not_fitted.empty() == (g.name != "nccl-gb200-1n4-azure-ndgb200v6-allreduce" &&
                                     g.name != "nccl-gh200-2n-cscs-alps-slingshot-allreduce" &&
                                     g.name.rfind("nccl-gb300-nvl72-", 0) != 0 && g.collective != "alltoall" &&
                                     g.source_key != "S97" && g.source_key != "S100" &&
                                     g.source_key != "S101" && g.source_key != "S106" && g.source_key != "S108" &&
                                     g.source_key != "S109" && g.source_key != "S110" &&
                                     g.source_key != "S116" && g.source_key != "S117" &&
                                     (g.source_key != "S111" || g.name.rfind("nccl-h100-1n-xxrjun-", 0) == 0)));
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
  // ALCF Sophia's two DGX A100 nodes (S106): all_gather_perf's rows of 0 bytes skipped, the first at 256 B;
  // InfiniBand on the DGX A100 preset, NCCL 2.22.3's table, not fitted.
  const auto& sophia = named("nccl-a100-2n-alcf-sophia-allgather");
  CHECK(sophia.source_key == "S106");
  CHECK(sophia.points.size() == 23);
  CHECK(sophia.points[0].bytes == 256);
  CHECK(sophia.points[0].time_s == doctest::Approx(36.23e-6));  // in place, the faster
  CHECK(sophia.points[0].nccl_version == 22203);
  CHECK(published_base_cluster(sophia) == "{preset: dgx-a100-ib200, nodes: 2}");
  CHECK(sophia.not_fitted.find("predicted blind") != std::string::npos);
  CHECK(named("nccl-a100-2n-alcf-sophia-allreduce").points.size() == 29);
  // Two p5.48xlarge on EKS (S108): the machine named, so its preset; 8 B to 16 GiB.
  const auto& p5 = named("nccl-h100-2n-aws-p5-keitaw-allreduce");
  CHECK(p5.points.size() == 32);
  CHECK(published_base_cluster(p5) == "{preset: aws-p5, nodes: 2}");
  CHECK(p5.points[0].nccl_version == 22203);
  // CSCS's Alps series (S110): 2 to 512 nodes of the alps-gh200 preset.
  const auto& alps512 = named("nccl-gh200-512n-cscs-alps-boeschf-allreduce");
  CHECK(alps512.points.size() == 30);
  CHECK(alps512.points[0].ranks() == 2048);
  CHECK(published_base_cluster(alps512) == "{preset: alps-gh200, nodes: 512}");
  // Perlmutter (S109): the machine named, so its preset.
  CHECK(published_base_cluster(named("nccl-a100-2n-nersc-perlmutter-allreduce")) == "{preset: perlmutter-a100, nodes: 2}");
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
  CHECK_THROWS_WITH_AS(load_published("/nonexistent/pm.yaml"), Contains("published measurements not found"), InputError);
}

TEST_CASE("fitting every published table at once, from the priors: the presets' values, as measured") {
  const auto groups = load_published(kPublished);
  std::vector<Sample> samples;
  for (const auto& g : groups) {
    if (!g.not_fitted.empty()) continue;  // as `calibrate published --all`: validated, never fitted
    const auto c = with_priors(load_cluster_arg(published_base_cluster(g)));
    for (const auto& p : g.points) samples.push_back({p, c, g.name});
  }
  REQUIRE(samples.size() == 631);
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
  // rings set NVLink3's, one H100 node's all-gather and reduce-scatter rings NVLink4's, S111: the
  // NVLink4 all-reduce tables run NVLS), and LL128 on A100's NVLink.
  CHECK(value("collectives.slice_latency@nvlink3") ==
        doctest::Approx(topologies::preset("dgx-a100-ib200").collectives.slice_latency).epsilon(1e-2));
  CHECK(value("collectives.slice_latency@nvlink3") > 4e-6);
  CHECK(value("collectives.slice_latency@nvlink4") ==
        doctest::Approx(topologies::preset("dgx-h100-ib400").collectives.slice_latency).epsilon(1e-2));
  CHECK(value("collectives.slice_latency@nvlink4") > 0.3e-6);
  CHECK(value("collectives.slice_latency@nvlink4") < 1e-6);
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
  // InfiniBand, from the tables at 2-8 nodes: 0.96 of the NICs' line rate (the maintainers' 48.5 of 50
  // GB/s), and a full H100 node's 2 channels a NIC at 20.06 GB/s each (0.80 of it) where they bind.
  CHECK(value("nics.efficiency@ib") == doctest::Approx(0.9626).epsilon(2e-3));
  CHECK(value("collectives.net_channel_rate@nvlink4") ==
        doctest::Approx(topologies::preset("dgx-h100-ib400").collectives.net_channel_rate).epsilon(2e-3));
  CHECK(value("collectives.net_channel_rate@nvlink5") ==
        doctest::Approx(topologies::preset("dgx-b200-ib400").collectives.net_channel_rate).epsilon(2e-3));
  // Residuals as measured (docs/calibration.md): in-sample, per size band.
  CHECK(summarize(r.points, size_bands()[4]).median_abs < 0.055);  // >= 1 MiB: 3.3%
  CHECK(summarize(r.points, size_bands()[3]).median_abs < 0.12);   // 32 KiB-1 MiB: 9.2%
  CHECK(summarize(r.points, size_bands()[4]).p90_abs < 0.20);      // >= 1 MiB: 17.1%
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
