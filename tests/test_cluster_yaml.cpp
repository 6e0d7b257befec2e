// Cluster descriptions in YAML: units, overrides onto a preset, fabric geometry, transports, rails,
// NCCL pins, the round trip through cluster_yaml, and the errors a user can cause. An error names
// file:line, the key path and what was expected, since that is all a user has to fix it by.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cluster_testing.hpp"
#include "topologies/cluster.hpp"
#include "topologies/cluster_yaml.hpp"

using namespace tagcsim::topologies;
using namespace tagcsim::test;  // load
using doctest::Approx;
using doctest::Contains;
using tagcsim::Input;
using tagcsim::InputError;

TEST_CASE("host_cpu and nccl.version: what NCCL's defaults depend on, and one-line errors") {
  Cluster c = load("cluster:\n  preset: dgx-h100-ib400\n  host_cpu: amd\n  nccl: {version: 2.21.5}\n");
  CHECK(c.host_cpu == HostCpu::Amd);
  CHECK(c.nccl.version == 22105);
  CHECK(describe(c.nccl) == "NCCL 2.21.5");
  CHECK(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {version: 2.27}\n").nccl.version == 22700);
  CHECK(format_nccl_version(21805) == "2.18.5");
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  host_cpu: power9\n"),
                       doctest::Contains("t.yaml:3: cluster.host_cpu: "), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {version: 3.1}\n"),
                       "t.yaml:3: cluster.nccl.version: expected an NCCL release such as 2.18.5 or 2.27, got '3.1'",
                       InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {version: latest}\n"),
                       doctest::Contains("t.yaml:3: cluster.nccl.version: expected an NCCL release"), InputError);
}

TEST_CASE("units: bandwidths, times, bytes and FLOP rates in a full description") {
  Cluster c = load(R"(
cluster:
  name: lab
  nodes: 2
  gpus_per_node: 4
  gpu: {name: X, peak_flops_bf16: 989 TFLOP/s, peak_flops_fp32: 60 TFLOP/s, memory_bytes: 80 GiB, memory_bandwidth: 3 TB/s}
  intra_node: {kind: pcie, bandwidth: 50 GB/s, latency: 1 us}
  nics: {count: 1, bandwidth: 400 Gb/s, latency: 1.5 us, efficiency: 0.5}
  collectives: {step_latency_intra: 2 us, step_latency_inter: 5 us, launch_latency: 0.01 ms}
)");
  CHECK(c.name == "lab");
  CHECK(c.gpus() == 8);
  CHECK(c.nics.bandwidth == Approx(50e9));   // 400 Gb/s
  CHECK(c.intra.bandwidth == Approx(50e9));  // 50 GB/s
  CHECK(c.intra.kind == "pcie");
  CHECK(c.nics.latency == Approx(1.5e-6));
  CHECK(c.collectives.launch_latency == Approx(10e-6));
  CHECK(c.gpu.peak_flops_bf16 == Approx(989e12));
  CHECK(c.gpu.peak_flops_tf32 == Approx(60e12));  // no TF32 given: runs at the FP32 rate
  CHECK(c.gpu.memory_bytes == Approx(80.0 * 1024 * 1024 * 1024));
  CHECK(c.gpu.memory_bandwidth == Approx(3e12));
  CHECK(c.node_injection_bandwidth() == Approx(25e9));
  CHECK(c.fabric.kind == Fabric::Kind::SingleSwitch);
  CHECK(c.source.find("t.yaml") != std::string::npos);
}

TEST_CASE("overrides of nested maps merge field by field onto the preset") {
  Cluster base = preset("dgx-h100-ib400");
  Cluster c = load(R"(
cluster:
  preset: dgx-h100-ib400
  nics: {bandwidth: 100 Gb/s}
  gpu: {gemm_efficiency: 0.6}
  fabric: {oversubscription: 2}
)");
  CHECK(c.name == "dgx-h100-ib400");
  CHECK(c.nics.bandwidth == Approx(12.5e9));
  CHECK(c.nics.count == base.nics.count);
  CHECK(c.nics.latency == base.nics.latency);
  CHECK(c.nics.efficiency == base.nics.efficiency);
  CHECK(c.gpu.gemm_efficiency == Approx(0.6));
  CHECK(c.gpu.peak_flops_bf16 == base.gpu.peak_flops_bf16);
  CHECK(c.gpu.memory_efficiency == base.gpu.memory_efficiency);
  CHECK(c.fabric.oversubscription == 2);
  CHECK(c.fabric.nodes_per_leaf == base.fabric.nodes_per_leaf);
  CHECK(c.fabric.kind == base.fabric.kind);
  CHECK(c.intra.bandwidth == base.intra.bandwidth);
  CHECK(c.collectives.launch_latency == base.collectives.launch_latency);
  for (const char* field :
       {"Overridden at t.yaml:3:", "nics.bandwidth", "gpu.gemm_efficiency", "fabric.oversubscription"})
    CHECK(c.source.find(field) != std::string::npos);

  Cluster d = load("cluster: {preset: aws-p5, gpu: {preset: a100-80gb, memory_efficiency: 0.8}}");
  CHECK(d.gpu.name == "A100-SXM4-80GB");
  CHECK(d.gpu.memory_efficiency == Approx(0.8));
  CHECK(d.gpu.gemm_efficiency == device("a100-80gb").gemm_efficiency);
  CHECK(d.nics.count == 32);
  CHECK(load("cluster: {preset: aws-p4de, gpu: h100-sxm}").gpu.name == "H100-SXM5-80GB");
}

TEST_CASE("fat-tree geometry: one partly filled leaf below 32 nodes, 2048 nodes in 64 leaves") {
  Cluster four = load("cluster: {preset: dgx-h100-ib400, nodes: 4}");
  CHECK(four.gpus() == 32);
  CHECK(four.nodes_in_leaf() == 4);
  CHECK(four.leaves() == 1);
  CHECK(four.pods() == 1);
  CHECK(four.fabric.nodes_per_leaf == 32);  // kept, so a later sweep over nodes sees 32 per leaf

  Cluster mid = load("cluster: {preset: dgx-h100-ib400, nodes: 128}");
  CHECK(mid.gpus() == 1024);
  CHECK(mid.leaves() == 4);

  Cluster big = load("cluster: {preset: dgx-h100-ib400, nodes: 2048}");
  CHECK(big.gpus() == 16384);
  CHECK(big.leaves() == 64);
  CHECK(big.pods() == 1);

  Cluster big3 = load("cluster: {preset: dgx-h100-ib400, nodes: 2048, fabric: {kind: fat_tree_3}}");
  CHECK(big3.leaves_in_pod() == 32);
  CHECK(big3.pods() == 2);
  Cluster small3 = load("cluster: {preset: dgx-h100-ib400, nodes: 96, fabric: {kind: fat_tree_3}}");
  CHECK(small3.leaves() == 3);
  CHECK(small3.pods() == 1);  // fewer leaves than one pod: a single partly filled pod

  CHECK(preset("aws-p5").leaves() == 1);
  CHECK(fabric_kind_name(Fabric::Kind::FatTree3) == "fat_tree_3");
}

TEST_CASE("a single node is valid with any fabric and no NICs") {
  Cluster c = load(R"(
cluster:
  nodes: 1
  gpus_per_node: 8
  gpu: h100-sxm
  intra_node: {bandwidth: 450 GB/s}
  fabric: {kind: fat_tree_3}
)");
  CHECK(c.nics.count == 0);
  CHECK(c.leaves() == 1);
  CHECK_NOTHROW(load("cluster: {preset: dgx-h100-ib400, nodes: 1, nics: {count: 0}}"));
}

TEST_CASE("errors name file:line, the key path and what was expected") {
  // Unknown keys, at any depth, with a did-you-mean.
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nic: {count: 4}\n"),
                       Contains("t.yaml:3: cluster.nic: unknown key (did you mean 'nics'?)"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nics:\n    bandwith: 100 Gb/s\n"),
                       Contains("t.yaml:4: cluster.nics.bandwith: unknown key (did you mean 'bandwidth'?)"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: aws-p5\n  gpu: {gemm_eficiency: 0.5}\n"),
      Contains("t.yaml:3: cluster.gpu.gemm_eficiency: unknown key (did you mean 'gemm_efficiency'?)"),
      InputError);
  // Wrong types and ranges.
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nodes: four\n"),
                       Contains("t.yaml:3: cluster.nodes: expected an integer, got 'four'"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nodes: 0\n"),
                       Contains("t.yaml:3: cluster.nodes: expected an integer >= 1, got 0"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nics:\n    bandwidth: -5 Gb/s\n"),
                       Contains("t.yaml:4: cluster.nics.bandwidth: expected a positive bandwidth"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: dgx-h100-ib400\n  nics:\n    efficiency: 1.5\n"),
      Contains("t.yaml:4: cluster.nics.efficiency: expected an efficiency in (0, 1], got 1.5"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-b200-ib400\n  intra_node:\n    step_latency: -1 us\n"),
                       Contains("t.yaml:4: cluster.intra_node.step_latency: expected a non-negative time"), InputError);
  CHECK(load("cluster:\n  preset: dgx-b200-ib400\n  intra_node: {step_latency: 2 us}\n").intra.step_latency == Approx(2e-6));
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: dgx-h100-ib400\n  fabric: {oversubscription: 0.5}\n"),
      Contains("t.yaml:3: cluster.fabric.oversubscription: expected a downlink:uplink ratio >= 1"),
      InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  fabric: {kind: fat_tree2}\n"),
                       Contains("t.yaml:3: cluster.fabric.kind: expected one of: single_switch, fat_tree_2, "
                                "fat_tree_3; got 'fat_tree2' (did you mean 'fat_tree_2'?)"),
                       InputError);
}

TEST_CASE("a node count that does not fill the last leaf or pod leaves it partly filled") {
  // 64 DGX A100 on SuperPOD leaves of 20: three full leaves and one of four.
  auto c = load("cluster:\n  preset: dgx-a100-ib200\n  nodes: 64\n");
  CHECK(c.nodes_in_leaf() == 20);
  CHECK(c.leaves() == 4);
  CHECK(c.nodes_in_last_leaf() == 4);
  c = load("cluster:\n  preset: dgx-h100-ib400\n  nodes: 100\n  fabric:\n    nodes_per_leaf: 30\n");
  CHECK(c.leaves() == 4);
  CHECK(c.nodes_in_last_leaf() == 10);
  // 96 nodes on leaves of 32 in pods of 2: a full pod and one with a single leaf.
  c = load("cluster:\n  preset: dgx-h100-ib400\n  nodes: 96\n  fabric: {kind: fat_tree_3, leaves_per_pod: 2}\n");
  CHECK(c.leaves() == 3);
  CHECK(c.pods() == 2);
  CHECK(c.nodes_in_last_leaf() == 32);
}

TEST_CASE("errors: fabric geometry and NICs, blamed on the key the user wrote") {
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: dgx-h100-ib400\n  nodes: 96\n  fabric: {kind: fat_tree_3, leaves_per_pod: 0}\n"),
      Contains("t.yaml:4: cluster.fabric.leaves_per_pod"), InputError);
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: eth-25g\n  fabric:\n    kind: fat_tree_2\n"),
      Contains("t.yaml:4: cluster.fabric.kind: a fat_tree_2 needs nodes_per_leaf >= 1, got 0"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nics: {count: 0}\n"),
                       Contains("t.yaml:3: cluster.nics.count: expected at least 1 NIC per node for 2 nodes"),
                       InputError);
}

TEST_CASE("errors: unknown presets and missing keys") {
  CHECK_THROWS_WITH_AS(
      load("cluster: dgx-h10\n"),
      Contains("t.yaml:1: cluster: unknown cluster preset 'dgx-h10' (did you mean 'dgx-h100-ib400'?)"),
      InputError);
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: aws-p6\n"),
      Contains("t.yaml:2: cluster.preset: unknown cluster preset 'aws-p6' (did you mean 'aws-p5'?)"),
      InputError);
  CHECK_THROWS_WITH_AS(
      load("cluster:\n  preset: aws-p5\n  gpu: h10\n"),
      Contains("t.yaml:3: cluster.gpu: unknown device preset 'h10' (did you mean 'h100-sxm'?)"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: aws-p5\n  gpu: {preset: r200}\n"),
                       Contains("t.yaml:3: cluster.gpu.preset: unknown device preset 'r200'"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  nodes: 1\n"),
                       Contains("t.yaml:2: cluster: missing required key 'gpu'"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  nodes: 2\n  gpus_per_node: 1\n  gpu: l4\n"),
                       Contains("cluster: missing required key 'nics'"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  gpu: {name: X, peak_flops_bf16: 1e15}\n"),
                       Contains("t.yaml:2: cluster.gpu: missing required key 'peak_flops_fp32'"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster: [a, b]\n"),
                       Contains("t.yaml:1: cluster: expected a cluster preset name or a map"), InputError);
}

TEST_CASE("validate() checks clusters built in code, naming the field") {
  Cluster c = preset("dgx-h100-ib400");
  c.fabric.oversubscription = 0.5;
  CHECK_THROWS_WITH_AS(validate(c, "cluster 'x'"),
                       Contains("cluster 'x': fabric.oversubscription: expected a downlink:uplink ratio >= 1"),
                       InputError);
  c = preset("aws-p5");
  c.gpu.gemm_efficiency = 0;
  CHECK_THROWS_WITH_AS(validate(c, "p5"),
                       Contains("p5: gpu.gemm_efficiency: expected an efficiency in (0, 1]"), InputError);
  c = preset("aws-p5");
  c.nics.bandwidth = -1;
  CHECK_THROWS_WITH_AS(validate(c, "p5"), Contains("p5: nics.bandwidth: expected a positive bandwidth"),
                       InputError);
}

TEST_CASE("load_device: preset name, preset with overrides, full map") {
  auto dev = [](const std::string& text) { return load_device(Input::load_string(text, "d.yaml")["gpu"]); };
  CHECK(dev("gpu: l4").name == "L4-24GB");
  CHECK(dev("gpu: {preset: h100-sxm, profile: my-h100.yaml}").profile == "my-h100.yaml");
  CHECK(dev("gpu: {preset: h100-sxm, profile: ''}").profile.empty());  // the datasheet roofline
  DeviceProfile d = dev("gpu: {preset: h100-sxm, gemm_efficiency: 0.6}");
  CHECK(d.gemm_efficiency == Approx(0.6));
  CHECK(d.peak_flops_bf16 == Approx(989.4e12));
  DeviceProfile f =
      dev("gpu: {name: Y, peak_flops_bf16: 100 TFLOP/s, peak_flops_fp32: 10 TFLOP/s, "
          "peak_flops_tf32: 50 TFLOP/s, memory_bytes: 16 GiB, memory_bandwidth: 1 TB/s}");
  CHECK(f.name == "Y");
  CHECK(f.peak_flops_tf32 == Approx(50e12));
  CHECK(f.gemm_efficiency == Approx(0.7));  // struct default
  CHECK_THROWS_WITH_AS(dev("gpu:\n  preset: h100-sxm\n  memory_efficiency: 0\n"),
                       Contains("d.yaml:3: gpu.memory_efficiency: expected an efficiency in (0, 1], got 0"),
                       InputError);
  CHECK_THROWS_WITH_AS(dev("gpu: {peak_flops_bf16: 1e15}"),
                       Contains("gpu: missing required key 'peak_flops_fp32'"), InputError);
}

TEST_CASE("transports: a profile by name, by path or inline, and a missing field is an error at its file:line") {
  const Cluster c = load("cluster:\n  preset: dgx-h100-ib400\n  nics: {transport: roce}\n");
  CHECK(c.nics.transport.kind == "roce");
  CHECK(c.nics.efficiency == Approx(0.9428));  // the transport profile's (fitted), as no efficiency was given
  const Cluster d = load("cluster:\n  preset: dgx-h100-ib400\n  nics: {transport: roce, efficiency: 0.9}\n");
  CHECK(d.nics.efficiency == Approx(0.9));
  const Cluster e = load("cluster:\n  preset: dgx-h100-ib400\n  nics:\n    transport: {name: mine, kind: ib, latency: 3 us, "
                         "overhead: 1 us, efficiency: 0.8, source: test}\n");
  CHECK(e.nics.transport.latency == Approx(3e-6));
  CHECK(e.nics.efficiency == Approx(0.8));
  const std::string path = "/tmp/tagcsim_test_transport_" + std::to_string(::getpid()) + ".yaml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("# no efficiency\ntransport:\n  name: x\n  kind: efa\n  latency: 20 us\n  overhead: 2 us\n  source: t\n", f);
    std::fclose(f);
  }
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: aws-p5\n  nics: {transport: " + path + "}\n"),
                       Contains((path + ":3: transport: missing required key 'efficiency'").c_str()), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: aws-p5\n  nics: {transport: infiniband}\n"),
                       Contains("t.yaml:3: cluster.nics.transport: unknown transport profile 'infiniband'"), InputError);
  CHECK_THROWS_WITH_AS(load_transport(Input::load_string("{name: x, kind: rdma, latency: 1 us, overhead: 1 us, "
                                                         "efficiency: 0.9, source: s}", "p.yaml")),
                       Contains("p.yaml:1: kind: expected one of: ib, roce, efa, tcpx, tcpxo, slingshot, socket"), InputError);
  const auto names = transport_names();
  for (const char* n : {"ib", "roce", "efa", "tcpx", "tcpxo", "slingshot", "socket"}) {
    CAPTURE(n);
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
    CHECK_NOTHROW(load_transport(std::string(n)));
  }
}

TEST_CASE("the collective model's held-out errors: one line per connection, a misspelt one is an error at its line") {
  const std::string path = "/tmp/tagcsim_test_held_out_" + std::to_string(::getpid()) + ".yaml";
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("format: tagcsim-collective-held-out/2\ncommand: c\nheld_out:\n  ib: \"2 tables: 5%\"\n  one_node_nvlink4: \"1 table\"\n"
        "largest_nodes:\n  ib: 8\n");
  const auto held = load_collective_held_out(path);
  CHECK(held.lines.size() == 2);
  CHECK(held.lines.at("ib") == "2 tables: 5%");
  CHECK(held.lines.at("one_node_nvlink4") == "1 table");
  CHECK(held.largest_nodes == std::map<std::string, int>{{"ib", 8}});
  write("format: tagcsim-collective-held-out/2\ncommand: c\nheld_out:\n  infiniband: \"x\"\nlargest_nodes: {}\n");
  CHECK_THROWS_WITH_AS(load_collective_held_out(path),
                       Contains((path + ":4: held_out.infiniband: unknown connection 'infiniband'").c_str()), InputError);
  write("format: tagcsim-collective-held-out/1\ncommand: c\nheld_out: {}\nlargest_nodes: {}\n");
  CHECK_THROWS_WITH_AS(load_collective_held_out(path),
                       Contains((path + ":1: format: expected tagcsim-collective-held-out/2").c_str()), InputError);
  write("format: tagcsim-collective-held-out/2\nheld_out: {}\nlargest_nodes: {}\n");
  CHECK_THROWS_WITH_AS(load_collective_held_out(path), Contains("missing required key 'command'"), InputError);
  // A node count: for a connection across nodes with a line, and at least the 2 a table across nodes has.
  write("format: tagcsim-collective-held-out/2\ncommand: c\nheld_out:\n  ib: \"x\"\nlargest_nodes:\n  ib: 1\n");
  CHECK_THROWS_WITH_AS(load_collective_held_out(path),
                       Contains((path + ":6: largest_nodes.ib: expected an integer >= 2, got 1").c_str()), InputError);
  write("format: tagcsim-collective-held-out/2\ncommand: c\nheld_out:\n  ib: \"x\"\nlargest_nodes:\n  roce: 4\n");
  CHECK_THROWS_WITH_AS(load_collective_held_out(path),
                       Contains((path + ":6: largest_nodes.roce: expected a held_out line").c_str()), InputError);
  write("format: tagcsim-collective-held-out/2\ncommand: c\nheld_out:\n  one_node_nvlink4: \"x\"\nlargest_nodes:\n"
        "  one_node_nvlink4: 2\n");
  CHECK_THROWS_WITH_AS(load_collective_held_out(path), Contains(":6: largest_nodes.one_node_nvlink4: one node"),
                       InputError);
  std::remove(path.c_str());
  // The shipped file covers the transports the published tables cross, and one node of NVLink3,
  // NVLink4 and NVLink5 (Azure's 4-GPU GB200 VM, predicted, not fitted); no table crosses sockets.
  for (const char* c : {"ib", "roce", "efa", "tcpx", "tcpxo", "one_node_nvlink3", "one_node_nvlink4", "one_node_nvlink5"}) {
    CAPTURE(c);
    CHECK(collective_held_out(c).find("held out of the fit: >= 1 MiB median ") != std::string::npos);
  }
  CHECK(collective_held_out("socket").empty());
  CHECK(connection_key(load("cluster: {preset: dgx-h100-ib400, nodes: 2}")) == "ib");
  CHECK(connection_key(load("cluster: {preset: dgx-h100-ib400, nodes: 1}")) == "one_node_nvlink4");
  CHECK(connection_key(load("cluster: {preset: aws-p4de, nodes: 1}")) == "one_node_nvlink3");
  // An NVL72 rack is its own kind of node: CoreWeave's GB200 tables (validated, never fitted) speak
  // for racks, not for an 8-GPU B200 baseboard, nor do the H100 InfiniBand clusters speak for racks.
  CHECK(connection_key(load("cluster: {preset: gb200-nvl72, nodes: 1}")) == "one_node_nvlink5_nvl72");
  CHECK(connection_key(load("cluster: {preset: gb200-nvl72, nodes: 2}")) == "ib_nvl72");
  CHECK(connection_key(load("cluster: {preset: dgx-b200-ib400, nodes: 1}")) == "one_node_nvlink5");
  CHECK(connection_key(load("cluster: {preset: gb300-nvl72, nodes: 2, nics: {transport: roce}}")) == "roce_nvl72");
  // CoreWeave's and OCI's racks: 3 sources inside a rack, CoreWeave's across racks over InfiniBand,
  // OCI's GB200 and GB300 over RoCE (two quick-start pages and the oci-hpc-oke sweep at every size, S99).
  CHECK(collective_held_out("one_node_nvlink5_nvl72").find("of 3 sources, each source held out of the fit") != std::string::npos);
  CHECK(collective_held_out("ib_nvl72").find("of 1 source on 2 to 20 racks, each source held out of the fit") != std::string::npos);
  CHECK(collective_held_out("roce_nvl72").find("of 3 sources on 2 to 3 racks, each source held out of the fit") != std::string::npos);
  CHECK(collective_held_out("roce_nvl72").find("< 1 MiB median") != std::string::npos);
  // The published tables' widest rings: InfiniBand's 10 nodes (S111), Slingshot's 512 (CSCS's Alps series,
  // S110), 2 for the other fabrics; CoreWeave's 20 GB200 racks; none inside one node.
  CHECK(collective_held_out("ib").find("of 8 sources on 2 to 10 nodes, each source") != std::string::npos);
  CHECK(collective_held_out_largest_nodes("ib") == 10);
  CHECK(collective_held_out("slingshot").find("of 3 sources on 2 to 512 nodes, each source") != std::string::npos);
  CHECK(collective_held_out_largest_nodes("slingshot") == 512);
  for (const char* c : {"roce", "efa", "tcpx", "tcpxo"}) {
    CAPTURE(c);
    CHECK(collective_held_out_largest_nodes(c) == 2);
  }
  CHECK(collective_held_out_largest_nodes("ib_nvl72") == 20);
  CHECK(collective_held_out_largest_nodes("roce_nvl72") == 3);
  CHECK(collective_held_out_largest_nodes("one_node_nvlink4") == 0);
  CHECK(collective_held_out_largest_nodes("socket") == 0);
}

TEST_CASE("rails: GPUs map to their NICs, and more rails than GPUs or NICs that do not split are errors") {
  Cluster c = load("cluster:\n  preset: dgx-h100-ib400\n  nics: {count: 4, bandwidth: 100 Gb/s}\n");
  CHECK(c.rails() == 4);
  CHECK(c.rail_of_gpu(0) == 0);
  CHECK(c.rail_of_gpu(7) == 3);
  CHECK(c.rails_of_gpus(2, 2) == 1);  // GPUs 2 and 3 share a NIC
  CHECK(c.rails_of_gpus(0, 8) == 4);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  gpus_per_node: 4\n  nics: {count: 8, rails: 8}\n"),
                       Contains("t.yaml:4: cluster.nics.rails: 8 rails need at least 8 GPUs per node (each rail is "
                                "some GPUs' NICs), got 4"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nics: {count: 6, rails: 4}\n"),
                       Contains("t.yaml:3: cluster.nics.rails: 6 NICs and 8 GPUs per node do not split evenly into 4 "
                                "rails"),
                       InputError);
  CHECK(load("cluster:\n  preset: dgx-h100-ib400\n  fabric: {rail_optimized: false}\n").fabric.rail_optimized == false);
}

TEST_CASE("nccl: pins like NCCL_ALGO / NCCL_PROTO, and an unknown algorithm or protocol is a one-line error") {
  const Cluster c = load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {algo: ring, proto: [LL128, simple], channels: 8}\n");
  CHECK(c.nccl.algos == NcclPins::Ring);
  CHECK(c.nccl.protos == (NcclPins::LL128 | NcclPins::Simple));
  CHECK(c.nccl.channels == 8);
  CHECK(describe(c.nccl) == "algo ring; proto ll128,simple; channels 8");
  // "^" leaves every other algorithm NCCL has, PAT (2.23 on) among them, as NCCL_ALGO=^NVLS,NVLSTree does.
  CHECK(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {algo: \"^nvls,nvlstree\"}\n").nccl.algos ==
        (NcclPins::Ring | NcclPins::Tree | NcclPins::Pat));
  CHECK(describe(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {algo: [ring, PAT]}\n").nccl) == "algo ring,pat");
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {algo: rings}\n"),
                       Contains("t.yaml:3: cluster.nccl.algo: unknown NCCL algorithm 'rings' (did you mean 'ring'?)"),
                       InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nccl:\n    proto: [simple, LL256]\n"),
                       Contains("t.yaml:4: cluster.nccl.proto[1]: unknown NCCL protocol 'LL256'"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {proto: \"^ll,ll128,simple\"}\n"),
                       Contains("t.yaml:3: cluster.nccl.proto: excludes every protocol"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  nccl: {algorithm: ring}\n"),
                       Contains("t.yaml:3: cluster.nccl.algorithm: unknown key; expected one of: algo, proto, channels, version, source"),
                       InputError);
}

TEST_CASE("cluster_yaml: every preset written back loads as the same cluster, key for key") {
  for (const auto& name : preset_names()) {
    CAPTURE(name);
    auto c = preset(name);
    c.nccl.algos = NcclPins::Ring | NcclPins::Tree;  // the pins too
    c.nccl.protos = NcclPins::Simple;
    const std::string text = cluster_yaml(c);
    const Cluster again = load(text);
    CHECK(cluster_yaml(again) == text);
    CHECK(again.gpu.sm == c.gpu.sm);
    CHECK(again.intra.name == c.intra.name);
    CHECK(again.intra.nvls_efficiency == c.intra.nvls_efficiency);
    CHECK(again.nics.transport.name == c.nics.transport.name);
    CHECK(again.nics.transport.latency == c.nics.transport.latency);
    CHECK(again.nics.rails == c.nics.rails);
    CHECK(again.fabric.rail_optimized == c.fabric.rail_optimized);
    CHECK(again.collectives.host_launch_per_channel == c.collectives.host_launch_per_channel);
    CHECK(again.collectives.nvls_depth == c.collectives.nvls_depth);
    CHECK(again.collectives.net_channel_rate == doctest::Approx(c.collectives.net_channel_rate));
    CHECK(again.nccl.algos == c.nccl.algos);
  }
  // No channel ceiling (a cluster built from scratch) writes 0 and reads back as none.
  auto none = preset("dgx-h100-ib400");
  none.collectives.net_channel_rate = 0;
  CHECK(load(cluster_yaml(none)).collectives.net_channel_rate == 0);
}

TEST_CASE("collectives.net_channel_rate is a bandwidth per channel or 0 for none and a bare or negative number names its line") {
  CHECK(load("cluster:\n  preset: dgx-h100-ib400\n").collectives.net_channel_rate == doctest::Approx(20.06e9));
  CHECK(load("cluster:\n  preset: dgx-a100-ib200\n").collectives.net_channel_rate == doctest::Approx(24e9));
  CHECK(load("cluster:\n  preset: dgx-h100-ib400\n  collectives: {net_channel_rate: 30 GB/s}\n").collectives.net_channel_rate ==
        doctest::Approx(30e9));
  CHECK(load("cluster:\n  preset: dgx-h100-ib400\n  collectives: {net_channel_rate: 0}\n").collectives.net_channel_rate == 0);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  collectives: {net_channel_rate: 30}\n"),
                       doctest::Contains(":3: cluster.collectives.net_channel_rate: expected a bandwidth with a unit"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  collectives: {net_channel_rate: -3 GB/s}\n"),
                       doctest::Contains(":3: cluster.collectives.net_channel_rate: expected a positive bandwidth"), InputError);
}

TEST_CASE("gpu.profile: a path is taken beside the file that names it when the profile is there") {
  const auto dir = std::filesystem::temp_directory_path() / ("tagcsim-profile-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "box");
  std::ofstream(dir / "box" / "device-x.yaml") << "format: tagcsim-device-profile/1\n";
  std::ofstream(dir / "box" / "c.yaml") << "cluster: {preset: dgx-h100-ib400, gpu: {profile: device-x.yaml}}\n";
  const auto c = load_cluster(Input::load_file((dir / "box" / "c.yaml").string())["cluster"]);
  CHECK(c.gpu.profile == (dir / "box" / "device-x.yaml").string());
  // Not there: as given (relative to where tagcsim runs); a name: a shipped profile.
  std::ofstream(dir / "box" / "d.yaml") << "cluster: {preset: dgx-h100-ib400, gpu: {profile: elsewhere/p.yaml}}\n";
  CHECK(load_cluster(Input::load_file((dir / "box" / "d.yaml").string())["cluster"]).gpu.profile == "elsewhere/p.yaml");
  std::ofstream(dir / "box" / "e.yaml") << "cluster: {preset: dgx-h100-ib400, gpu: {profile: device-a100-80gb}}\n";
  CHECK(load_cluster(Input::load_file((dir / "box" / "e.yaml").string())["cluster"]).gpu.profile == "device-a100-80gb");
  std::filesystem::remove_all(dir);
}
