// A tuner plugin's rules (`nccl: {tuner_config: FILE}`, the CSV of NCCL's example tuner plugin):
// read line by line with file:line errors, and applied before NCCL's own choice the way the plugin
// applies them: the first rule that matches the collective and may run picks algorithm, protocol
// and channels.
#include "collective_testing.hpp"
#include "scratch_dir.hpp"
#include "sim/collective.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>

using namespace tagcsim;
using namespace tagcsim::sim;
using P = topologies::NcclPins;

namespace {

struct Dir : test::ScratchDir {
  Dir() : ScratchDir("tuner") {}
};

// The message a file's bad line gives, "" when it reads.
std::string error_of(const Dir& d, const std::string& text) {
  try {
    topologies::read_nccl_tuner_config(d.write("bad.csv", text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Two 8x H100 nodes, 8 NICs of 50 GB/s, NCCL's latency table (scale 1), nothing fitted.
topologies::Cluster h100_pair() {
  auto c = test::rail_cluster(2);
  c.gpu.sm = 90;
  c.collectives.latency_scale = 1;
  return c;
}

CollectivePlan plan(const topologies::Cluster& c, CollectiveOp op, double bytes, const PlanOptions& o = {}) {
  return plan_collective(c, op, bytes, whole_cluster(c), o);
}

}  // namespace

TEST_CASE("a tuner config reads as NCCL's example plugin writes it") {
  const Dir d;
  const auto rules = topologies::read_nccl_tuner_config(d.write("t.csv",
                                                                "# collective_type,min_bytes,...\n"
                                                                "\n"
                                                                "allreduce,0,65536,tree,ll,4,2,-1\n"
                                                                "allgather, 65537, 4294967295, ring, ll128, -1, -1, 16, -1, 0\n"
                                                                "reducescatter,0,100,ring,simple,2,-1,-1,4\n"
                                                                "broadcast,0,100,ring,simple,2,-1,-1,-1,1\n"));
  REQUIRE(rules.size() == 4);
  CHECK(rules[0].op == "allreduce");
  CHECK(rules[0].max_bytes == 65536);
  CHECK(rules[0].algo == P::Tree);
  CHECK(rules[0].proto == P::LL);
  CHECK(rules[0].channels == 4);
  CHECK(rules[0].nodes == 2);
  CHECK(rules[0].ranks == -1);
  CHECK(rules[0].line == 3);
  CHECK(rules[1].min_bytes == 65537);  // spaces around the fields are taken off
  CHECK(rules[1].proto == P::LL128);
  CHECK(rules[1].ranks == 16);
  CHECK_FALSE(rules[1].never);
  CHECK(rules[2].never);  // 4 pipelined ops: tagcsim issues each collective alone
  CHECK(rules[3].never);  // registered buffers only: PyTorch registers none
}

TEST_CASE("a bad line of a tuner config stops with its file and line and what was expected") {
  const Dir d;
  const std::string file = (d.path / "bad.csv").string();
  const std::pair<const char*, std::string> cases[] = {
      {"# ok\nallreduce,0,1,tree,ll\n", ":2: expected 8 to 10 comma-separated fields"},
      {"allreduse,0,1,tree,ll,4,-1,-1\n", ":1: unknown collective_type 'allreduse'"},
      {"allreduce,0,1,trees,ll,4,-1,-1\n", ":1: unknown algorithm 'trees'"},
      {"allreduce,0,1,tree,ll256,4,-1,-1\n", ":1: unknown protocol 'll256'"},
      {"allreduce,0,1,collnet_direct,simple,4,-1,-1\n", ":1: algorithm: collnet_direct needs a SHARP-capable fabric"},
      {"allreduce,10,1,tree,ll,4,-1,-1\n", ":1: min_bytes 10 is above max_bytes 1"},
      {"allreduce,0,1k,tree,ll,4,-1,-1\n", ":1: max_bytes: expected a whole number of at least 0, got '1k'"},
      {"allreduce,0,1,tree,ll,0,-1,-1\n", ":1: channels: expected -1 (any) or a positive whole number, got '0'"},
      {"allreduce,0,1,tree,ll,65,-1,-1\n", ":1: channels: expected -1 (NCCL's own) or 1 to 64, got 65"},
      {"allreduce,0,1,tree,ll,4,-1,-1,1,2\n", ":1: regBuff: expected -1, 0 or 1, got '2'"},
  };
  for (const auto& [text, expected] : cases) CHECK(error_of(d, text).find(file + expected) == 0);
}

TEST_CASE("the first rule that matches picks the algorithm and protocol and channels as pins would") {
  auto c = h100_pair();
  c.nccl.tuner_rules = {{.op = "allreduce", .min_bytes = 0, .max_bytes = 1 << 20, .algo = P::Tree, .proto = P::LL,
                         .channels = 4, .nodes = 2},
                        {.op = "allreduce", .min_bytes = 0, .max_bytes = 1 << 20, .algo = P::Ring, .proto = P::Simple}};
  const auto chosen = plan(c, CollectiveOp::AllReduce, 65536);
  CHECK(chosen.tuner_rule == 0);
  CHECK(chosen.algorithm == Algorithm::Tree);
  CHECK(chosen.protocol == Protocol::LL);
  CHECK(chosen.channels == 4);
  // NCCL's tree LL latency on 2 nodes of 8 (tuning.cc, 2.28): 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us.
  CHECK(chosen.latency_seconds == doctest::Approx(25.2e-6));
  // The same plan as NCCL_ALGO=Tree NCCL_PROTO=LL with 4 channels pinned.
  auto pinned = h100_pair();
  pinned.nccl.channels = 4;
  const auto same = plan(pinned, CollectiveOp::AllReduce, 65536, {.algorithm = Algorithm::Tree, .protocol = Protocol::LL});
  CHECK(chosen.seconds() == doctest::Approx(same.seconds()));
  // Past every rule's sizes, or on another node count, NCCL chooses as without rules.
  const auto past = plan(c, CollectiveOp::AllReduce, 4 << 20);
  const auto free = plan(h100_pair(), CollectiveOp::AllReduce, 4 << 20);
  CHECK(past.tuner_rule == -1);
  CHECK(past.algorithm == free.algorithm);
  CHECK(past.seconds() == doctest::Approx(free.seconds()));
  c.nccl.tuner_rules[0].nodes = 4;
  CHECK(plan(c, CollectiveOp::AllReduce, 65536).tuner_rule == 1);
  // The caller's explicit choice wins over the rules.
  CHECK(plan(c, CollectiveOp::AllReduce, 65536, {.algorithm = Algorithm::Ring}).tuner_rule == -1);
}

TEST_CASE("a rule that cannot run passes to the next and LL128 across Hopper nodes runs at Simple speed") {
  auto c = h100_pair();
  c.nccl.tuner_rules = {{.op = "allgather", .max_bytes = 1e12, .algo = P::Tree, .proto = P::Simple},  // no tree all-gather
                        {.op = "allgather", .max_bytes = 1e12, .algo = P::Ring, .proto = P::LL128, .channels = 8}};
  const auto p = plan(c, CollectiveOp::AllGather, 64 << 20);
  CHECK(p.tuner_rule == 1);
  CHECK(p.algorithm == Algorithm::Ring);
  CHECK(p.protocol == Protocol::Simple);  // as measured on Hopper and Blackwell (docs/calibration.md)
  CHECK(p.ll128_left_out);
  CHECK(p.channels == 8);
  // A rule for a protocol the cluster's pins leave out is skipped, as NCCL marks it IGNORE.
  c.nccl.protos = P::Simple;
  c.nccl.tuner_rules[1].proto = P::LL;
  CHECK(plan(c, CollectiveOp::AllGather, 65536).tuner_rule == -1);
}

TEST_CASE("a cluster names its tuner config beside its own file") {
  const Dir d;
  d.write("rules.csv", "allreduce,0,65536,tree,ll,4,-1,-1\n");
  const auto yaml = d.write("c.yaml", "cluster: {preset: dgx-h100-ib400, nodes: 2, nccl: {tuner_config: rules.csv}}\n");
  const auto c = topologies::load_cluster(Input::load_file(yaml)["cluster"]);
  CHECK(c.nccl.tuner_config == (d.path / "rules.csv").string());
  REQUIRE(c.nccl.tuner_rules.size() == 1);
  CHECK(topologies::describe(c.nccl).find("tuner config") != std::string::npos);
  d.write("empty.csv", "# nothing\n");
  const auto empty = d.write("e.yaml", "cluster: {preset: dgx-h100-ib400, nodes: 2, nccl: {tuner_config: empty.csv}}\n");
  CHECK_THROWS_WITH_AS(topologies::load_cluster(Input::load_file(empty)["cluster"]),
                       doctest::Contains("e.yaml:1: cluster.nccl.tuner_config: '"), InputError);
  const auto missing = d.write("m.yaml", "cluster: {preset: dgx-h100-ib400, nodes: 2, nccl: {tuner_config: no.csv}}\n");
  CHECK_THROWS_WITH_AS(topologies::load_cluster(Input::load_file(missing)["cluster"]), doctest::Contains("no.csv"),
                       InputError);
}
