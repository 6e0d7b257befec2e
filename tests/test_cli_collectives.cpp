// The collective commands as a user meets them: `tagcsim collective`, `calibrate validate` over
// the shipped nccl-tests tables, and `calibrate nccl-tests` over one's own logs.
#include "command_testing.hpp"
#include "nccl_log_testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

TEST_CASE("tagcsim collective prints time, algbw and busbw the nccl-tests way, with NCCL's choices") {
  const auto o = run_tagcsim("collective --cluster dgx-h100-ib400 --op all_gather --bytes 1GiB --gpus 16");
  CHECK(o.code == 0);
  CHECK(o.output.find("busbw GB/s") != std::string::npos);
  CHECK(o.output.find("1073741824") != std::string::npos);
  CHECK(o.output.find("proto") != std::string::npos);
  CHECK(o.output.find(" ring ") != std::string::npos);
  CHECK(o.output.find("# LL128 left out: all-gathers and reduce-scatters across nodes run Simple") != std::string::npos);
  // LL128 asked for: it runs, and nothing was left out.
  CHECK(run_tagcsim("collective --cluster dgx-h100-ib400 --op all_gather --bytes 16MiB --gpus 16 --protocol ll128")
            .output.find("LL128 left out") == std::string::npos);
  // On A100 nodes NCCL's LL128 runs (S106): nothing left out, nothing to say.
  const auto a100 = run_tagcsim("collective --cluster dgx-a100-ib200 --op all_gather --bytes 16MiB --gpus 16");
  CHECK(a100.output.find("LL128 left out") == std::string::npos);
  CHECK(a100.output.find(" ring  LL128 ") != std::string::npos);
  // Two full H100 nodes: 16 channels x 20.06 GB/s offer 321 GB/s where the 8 NICs take 8 x 50 x 0.9626;
  // the report says which binds. An A100 node's HDR200 NICs fill first: no such line.
  CHECK(o.output.find("# NCCL's channels bind across nodes, not the NICs: 16 channels x 20.06 GB/s = 321 GB/s a node "
                      "where its NICs take 385") != std::string::npos);
  CHECK(a100.output.find("channels bind") == std::string::npos);
  // A small all-reduce on one node: LL on a ring; a large one: NVLink SHARP.
  const auto ar = run_tagcsim("collective --cluster dgx-h100-ib400 --op all_reduce --bytes 8KiB,8GiB --gpus 8");
  CHECK(ar.code == 0);
  CHECK(ar.output.find(" ring     LL ") != std::string::npos);
  CHECK(ar.output.find(" nvls Simple  16") != std::string::npos);
  const auto pinned = run_tagcsim("collective --cluster aws-p4de --op all_reduce --bytes 8KiB --gpus 16");
  CHECK(pinned.output.find("# pinned: proto simple (aws-ofi-nccl") != std::string::npos);
  CHECK(run_tagcsim("collective --cluster dgx-h100-ib400 --protocol LL256").code == 2);
  // An all-to-all is point to point: no algorithm to pin, its own note instead of the rings' error.
  const auto a2a = run_tagcsim("collective --cluster dgx-h100-ib400 --op alltoall --bytes 1KiB,1GiB --gpus 16");
  CHECK(a2a.code == 0);
  CHECK(a2a.output.find("      p2p     LL ") != std::string::npos);
  CHECK(a2a.output.find("      p2p Simple ") != std::string::npos);
  CHECK(a2a.output.find("# all-to-all: point-to-point sends and receives") != std::string::npos);
  CHECK(a2a.output.find("# held out") == std::string::npos);
  const auto pinned_a2a = run_tagcsim("collective --cluster dgx-h100-ib400 --op alltoall --algorithm ring");
  CHECK(pinned_a2a.code == 2);
  CHECK(pinned_a2a.output.find("--algorithm: an alltoall is point to point") != std::string::npos);
  // --gpus 0 is a mistake, not "the preset's size".
  const auto none = run_tagcsim("collective --cluster dgx-h100-ib400 --gpus 0");
  CHECK(none.code == 2);
  CHECK(none.output.find("--gpus: expected an integer >= 1, got 0") != std::string::npos);
}

namespace {

// The shipped tables of a few sources, for the leave-one-out runs: refitting without each of all
// the sources takes a minute. Entries are the file's "- id:" blocks; each names its source's key.
std::string published_subset(std::initializer_list<const char*> refs) {
  const std::string all = read_text(std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/published_measurements.yaml");
  const auto tail_at = all.find("\nlink_bandwidth_reference:");
  const std::string body = all.substr(0, tail_at), tail = tail_at == std::string::npos ? "" : all.substr(tail_at);
  std::string out;
  std::size_t at = 0;
  for (std::size_t next; at != std::string::npos; at = next) {
    next = body.find("\n- id: ", at + 1);
    const std::string block = body.substr(at, next == std::string::npos ? std::string::npos : next - at);
    bool keep = block.find("\n- id: ") != 0;  // the header: about, schema, sources
    for (const char* r : refs) keep = keep || block.find(std::string("\n    ref: ") + r + "\n") != std::string::npos;
    if (keep) out += block;
  }
  const std::string path = temp_path("published_subset.yaml");
  std::ofstream(path) << out << tail;
  return path;
}

}  // namespace

TEST_CASE("a table marked not_fitted is validated, predicted by the fit to the others, and in no fit") {
  // S02 (DGX H100, 32 points) and CoreWeave's GB200 NVL72 tables (S64, marked not_fitted).
  const std::string subset = published_subset({"S02", "S64"});
  const auto fitted = run_tagcsim("calibrate published --all --priors --data " + subset);
  CHECK(fitted.code == 0);
  CHECK(fitted.output.find("nccl-gb200-nvl72-1r-coreweave-allreduce: validated, not fitted: ") != std::string::npos);
  CHECK(fitted.output.find(", 32 points") != std::string::npos);  // S02's alone
  const auto v = run_tagcsim("calibrate validate --data " + subset);
  CHECK(v.code == 0);
  CHECK(v.output.find("held out (source S64 left out)") != std::string::npos);
  // Without S02 nothing is left to fit: S02 gets no held-out prediction.
  CHECK(v.output.find("held out (source S02 left out)") == std::string::npos);
  // The fitted tables' summary is S02's 15 points of 1 MiB and up alone; all points add CoreWeave's.
  CHECK(v.output.find("# The 1 fitted table's points (what the shipped presets were fitted to), per size band\n"
                      "  < 1 MiB         preset n=17 ") != std::string::npos);
  CHECK(v.output.find("  >= 1 MiB        preset n=15 ") != std::string::npos);
  CHECK(v.output.find("  >= 1 MiB        preset n=32 ") != std::string::npos);
}

TEST_CASE("calibrate validate runs on the shipped tables without --data, its held-out folds in parallel") {
  const auto o = run_tagcsim("calibrate validate --loo none");
  CHECK(o.code == 0);
  CHECK(o.output.find("nccl-a100-1n-mleng-allreduce") != std::string::npos);
  CHECK(o.output.find("nccl-h100-4n-voltagepark-ib-allgather") != std::string::npos);
  CHECK(o.output.find("cluster: {preset: dgx-b200-ib400, nodes: 2}") != std::string::npos);  // Lambda's B200
  CHECK(o.output.find("not found") == std::string::npos);
  // With the 5 of Azure's GB200 VM, 5 of CSCS's Alps, 15 of the shared 4-GPU H100 host's three tables (S97) and
  // 5 of OCI's two GB200 racks (S99), 5 of the H200 node's NCCL 2.26.2 rerun (S100) and 20 of the quiet 8-GPU
  // H100 node's four tables (S101), 10 of the DGX A100 pair's two (S106), 5 of the p5 pair's (S108), 5 of the
  // Perlmutter pair's (S109), 45 of CSCS's nine Alps tables (S110) and 5 each of Google's A3 Ultra and A3 Mega
  // all-gathers (S116, S117).
  CHECK(o.output.find("  32 KiB-1 MiB    preset n=218") != std::string::npos);
  // Per table and size band, with each source left out in turn (three sources: S02, S12, S43).
  const std::string subset = published_subset({"S02", "S12", "S43"});
  const std::string held_file = temp_path("held_out.yaml");
  const auto loo = run_tagcsim("calibrate validate --data " + subset + " --write-held-out " + held_file);
  CHECK(loo.code == 0);
  CHECK(loo.output.find("held out (source S12 left out)") != std::string::npos);
  // Per connection: the median and p90 of the held-out points printed table by table above it.
  // S02 and S43 are one H100 node each (NVLink4) (15 points of 1 MiB and up, 17 below, each); S12's three EFA
  // tables have 33 and 34.
  std::map<std::string, std::string> held;  // connection -> its quoted line
  {
    std::ifstream in(held_file);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("  ", 0) == 0 && line.find(": \"") != std::string::npos)
        held[line.substr(2, line.find(':') - 2)] = line.substr(line.find(": \"") + 3, line.size() - line.find(": \"") - 4);
  }
  REQUIRE(held.size() == 2);
  CHECK(held.at("efa").rfind("3 nccl-tests tables of 1 source on 2 nodes, each source held out of the fit: >= 1 MiB median ", 0) == 0);
  CHECK(held.at("efa").find("off (33 points); < 1 MiB median ") != std::string::npos);
  CHECK(held.at("efa").find("off (34 points)") != std::string::npos);
  {  // S12's EFA tables are of 2 nodes; one node has no ring across nodes to count.
    const std::string text = read_text(held_file);
    CHECK(text.find("format: tagcsim-collective-held-out/2\n") != std::string::npos);
    CHECK(text.ends_with("\nlargest_nodes:\n  efa: 2\n"));
  }
  const std::string one = held.at("one_node_nvlink4");
  CHECK(one.rfind("2 nccl-tests tables of 2 sources, each source held out of the fit: >= 1 MiB median ", 0) == 0);
  {
    std::vector<double> big;  // |error| of the one-node tables' held-out points of 1 MiB and up
    std::istringstream lines(loo.output);
    bool one_node = false, held_rows = false;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("== ", 0) == 0) one_node = line.find("-1n-") != std::string::npos, held_rows = false;
      if (line.find("   held out (source") == 0) held_rows = true;
      double bytes = 0, ranks = 0, measured = 0, model = 0, error = 0;
      if (one_node && held_rows && std::sscanf(line.c_str(), "%lf %lf %lf %lf %lf%%", &bytes, &ranks, &measured, &model, &error) == 5 &&
          bytes >= 1 << 20)
        big.push_back(std::abs(error));
    }
    REQUIRE(big.size() == 30);
    std::sort(big.begin(), big.end());
    const double median = (big[14] + big[15]) / 2, p90 = big[26];  // nearest rank: the 27th of 30
    // The table prints errors to 0.1%, so the median of two printed values may round the other way.
    double quoted_median = 0, quoted_p90 = 0;
    int points = 0;
    REQUIRE(std::sscanf(one.c_str() + one.find(">= 1 MiB median "), ">= 1 MiB median %lf%%, p90 %lf%% off (%d points)",
                        &quoted_median, &quoted_p90, &points) == 3);
    CHECK(points == 30);
    CHECK(std::abs(quoted_median - median) <= 0.06);
    CHECK(quoted_p90 == doctest::Approx(p90));
  }
  std::remove(held_file.c_str());
  CHECK(loo.output.find("nccl-a100-1n-mleng-allreduce") == std::string::npos);
  // The held-out folds run in parallel; one at a time, the output is byte for byte the same.
  CHECK(run_tagcsim("calibrate validate -j 1 --data " + subset).output == loo.output);
  CHECK(run_tagcsim("calibrate validate -j 3 --data " + subset).output == loo.output);
  CHECK(run_tagcsim("calibrate validate --loo table --data " + subset).output.find(
            "held out (table nccl-h100-1n-dgxc-allreduce left out)") != std::string::npos);
  CHECK(run_tagcsim("calibrate validate --loo sources").code == 2);
  CHECK(run_tagcsim("calibrate validate --loo none --write-held-out " + temp_path("h.yaml")).output ==
        "tagcsim: error: --write-held-out: needs the held-out fits; not with --loo none\n");
  CHECK(run_tagcsim("calibrate validate --write-held-out /nonexistent-dir/h.yaml").output ==
        "tagcsim: error: --write-held-out: cannot write '/nonexistent-dir/h.yaml': no folder '/nonexistent-dir'\n");
  std::remove(subset.c_str());
}

TEST_CASE("calibrate nccl-tests --held-out: each log predicted by a fit to the others") {
  // Two 2 x 2 all-gather logs of the same sizes, the second 10 us slower throughout. A fit to one
  // reproduces its times, so it predicts the other's as its own: a (19.8, 21.0, 22.0 us, the faster
  // placement) from b (29.8, 31.0, 32.0) is +50.5, +47.6, +45.5% off, median 47.6; b from a -33.6,
  // -32.3, -31.3%, median 32.3.
  // The shared log's times, out-of-place then in-place per size, replaced.
  auto log = [](const char* t1, const char* u1, const char* t2, const char* u2, const char* t3, const char* u3) {
    std::string text = kTwoByTwoAllGatherLog;
    for (auto [from, to] : {std::pair{"20.50", t1}, {"19.80", u1}, {"21.00", t2}, {"21.40", u2}, {"22.00", t3}, {"22.10", u3}})
      text.replace(text.find(from), std::string(from).size(), to);
    return text;
  };
  const auto a = write_temp("a.log", log("20.50", "19.80", "21.00", "21.40", "22.00", "22.10"));
  const auto b = write_temp("b.log", log("30.50", "29.80", "31.00", "31.40", "32.00", "32.10"));
  const auto o = run_tagcsim("calibrate nccl-tests " + a + " " + b + " --cluster dgx-h100-ib400 --held-out");
  REQUIRE(o.code == 0);
  auto median_of = [&](const std::string& file) {
    const auto at = o.output.find("#   " + file + ": < 1 MiB median ");
    REQUIRE(at != std::string::npos);
    return std::stod(o.output.substr(at + file.size() + 20));
  };
  CHECK(std::abs(median_of(a) - 47.6) < 1.5);
  CHECK(std::abs(median_of(b) - 32.3) < 1.5);
  CHECK(o.output.find("#   all logs: < 1 MiB median ") != std::string::npos);
  CHECK(run_tagcsim("calibrate nccl-tests " + a + " --cluster dgx-h100-ib400 --held-out").output ==
        "tagcsim: error: --held-out: needs two or more logs, each predicted by a fit to the others\n");
}

TEST_CASE("calibrate nccl-tests names every collective a log holds, as nccl-tests binaries run one after another") {
  // One log of two runs: the 2 x 2 all-gather, then the same rows as an all-reduce's.
  std::string second = kTwoByTwoAllGatherLog;
  second.replace(second.find("all_gather_perf"), 15, "all_reduce_perf");
  const auto both = write_temp("both.log", std::string(kTwoByTwoAllGatherLog) + second);
  const auto o = run_tagcsim("calibrate nccl-tests " + both + " --cluster dgx-h100-ib400");
  REQUIRE(o.code == 0);
  CHECK(o.output.find(both + ": 6 rows (all_gather all_reduce, 4 ranks on 2 node(s), 1 GPU(s) per process)") !=
        std::string::npos);
  std::remove(both.c_str());
}

TEST_CASE("cli: tagcsim collective prints the GPU and node count, also without --gpus") {
  const auto o = run_tagcsim("collective --cluster aws-p4de --op all_reduce --bytes 1MiB");
  CHECK(o.code == 0);
  CHECK(o.output.rfind("# all_reduce on aws-p4de: 2 nodes x 8 GPUs = 16 GPUs (the preset's size; --gpus N to change)", 0) == 0);
  // Beside it, how the model did on the published EFA tables when each was held out of the fit.
  CHECK(o.output.find("\n# held out, on published tables over efa: 4 nccl-tests tables of 2 sources on 2 nodes, each source held "
                      "out of the fit: >= 1 MiB median ") != std::string::npos);
  CHECK(o.output.find("# past the tables") == std::string::npos);  // the EFA tables (S12, S108) are of 2 nodes too
  CHECK(run_tagcsim("collective --cluster aws-p4de --bytes 1MiB --gpus 32").output.find(
            "\n# past the tables: those span at most 2 nodes, this one 4; the latency its ring's extra steps add is "
            "NCCL's and the transport's per-step costs extrapolated (docs/calibration.md)\n") != std::string::npos);
  CHECK(run_tagcsim("collective --cluster aws-p4de --bytes 1MiB --gpus 8").output.find(
            "# held out, on published tables on one node, nvlink3: 2 nccl-tests tables of 2 sources") != std::string::npos);
  CHECK(run_tagcsim("collective --cluster eth-25g --bytes 1MiB").output.find("# held out") == std::string::npos);
  const auto j = run_tagcsim("collective --cluster aws-p4de --bytes 1MiB --gpus 32 --format json");
  CHECK(j.output.find("\"nodes\": 4, \"gpus_per_node\": 8, \"ranks\": 32") != std::string::npos);
  // NCCL's own estimate beside the time: on one A100 node a 64 MiB Simple ring pays 28 slice flags
  // of NVLink3's 5.06 us and its 14 steps NVLink3's 0.091 us each that the tuner does not see.
  const auto t = run_tagcsim("collective --cluster dgx-a100-ib200 --op all_reduce --bytes 64MiB --gpus 8 --format json");
  const auto at = [&](const std::string& key) {
    const auto p = t.output.find("\"" + key + "\": ");
    return p == std::string::npos ? -1.0 : std::stod(t.output.substr(p + key.size() + 4));
  };
  CHECK(at("time_s") - at("tuner_s") == doctest::Approx(28 * 5.058e-6 + 14 * 0.09055e-6).epsilon(2e-3));  // to the printed digits
}

TEST_CASE("tagcsim collective follows a tuner config and says which sizes its rules chose") {
  const auto rules = write_temp("tuner-rules.csv", "# small all-reduces on a tree\nallreduce,0,65536,tree,ll,4,-1,-1\n");
  const auto cluster = write_temp("tuner-cluster.yaml", "cluster: {preset: dgx-h100-ib400, nodes: 2, nccl: {tuner_config: " +
                                                            rules + "}}\n");
  const auto o = run_tagcsim("collective --cluster " + cluster + " --op all_reduce --bytes 64KiB,8MiB");
  CHECK(o.code == 0);
  CHECK(o.output.find("# tuner config " + rules + ": its rules chose 65536 B (line 2)\n") != std::string::npos);
  CHECK(o.output.find("     65536      tree     LL   4 ") != std::string::npos);
  const auto json = run_tagcsim("collective --cluster " + cluster + " --op all_reduce --bytes 64KiB,8MiB --format json");
  CHECK(json.output.find("\"tuner_rule_line\": 2}") != std::string::npos);
  CHECK(json.output.find("\"tuner_rule_line\": null}") != std::string::npos);
  // A bad line: one line naming the file and the line, exit 2.
  const auto bad = write_temp("tuner-bad.csv", "allreduce,0,65536,tree,ll,4,-1\n");
  const auto bad_cluster =
      write_temp("tuner-bad.yaml", "cluster: {preset: dgx-h100-ib400, nodes: 2, nccl: {tuner_config: " + bad + "}}\n");
  const auto e = run_tagcsim("collective --cluster " + bad_cluster + " --op all_reduce --bytes 64KiB");
  CHECK(e.code == 2);
  CHECK(e.output.find(bad + ":1: expected 8 to 10 comma-separated fields") != std::string::npos);
}
