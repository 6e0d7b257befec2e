// The command line as a user meets it: exit codes and one-line errors.
#include "command_testing.hpp"
#include "nccl_log_testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace {

// Per process (ctest runs each case in its own), so that checkouts testing at once do not collide.
const std::string kTmp = "/tmp/tagcsim_test_" + std::to_string(::getpid()) + "_";

Outcome tagcsim(const std::string& args) { return run_command(std::string(TAGCSIM_BINARY) + " " + args); }

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = kTmp + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("bad scenario input exits with code 2 and one line naming file, line and key") {
  const auto path = write_temp("bad.yaml", "model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodez: 4}\n");
  const auto o = tagcsim("run " + path);
  CHECK(o.code == 2);
  CHECK(o.output == "tagcsim: error: " + path +
                        ":2: cluster.nodez: unknown key (did you mean 'nodes'?); expected one of: "
                        "preset, file, name, nodes, gpus_per_node, host_cpu, gpu, intra_node, nics, fabric, collectives, nccl, stragglers, source\n");
}

TEST_CASE("every kind of bad input exits with code 2 and one line naming file:line and the key path") {
  struct Case {
    const char* what;
    const char* yaml;
    const char* where;
  };
  const Case cases[] = {
      {"unknown key", "model: llama2-7b\ncluster: dgx-h100-ib400\ntraining: {micro_bach: 2}\n", ":3: training.micro_bach"},
      {"wrong type", "model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: four}\n", ":2: cluster.nodes"},
      {"negative bandwidth", "model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nics: {bandwidth: -1 Gb/s}\n",
       ":4: cluster.nics.bandwidth"},
      {"heads not dividing hidden", "model: {preset: llama2-7b, heads: 48}\ncluster: dgx-h100-ib400\n", ":1: model.heads"},
      {"GPUs not dividing evenly",
       "model: llama2-7b\ncluster: dgx-h100-ib400\ntraining: {sharding: hybrid_shard, hybrid_shard_gpus: 3}\n",
       ":3: training.hybrid_shard_gpus"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const auto path = write_temp("case.yaml", c.yaml);
    const auto o = tagcsim("run " + path);
    CHECK(o.code == 2);
    CHECK(o.output.find(path + c.where) != std::string::npos);
    CHECK(o.output.find('\n') == o.output.size() - 1);  // one line
  }
}

TEST_CASE("a missing scenario file exits with code 2") {
  const auto o = tagcsim("run /nonexistent/scenario.yaml");
  CHECK(o.code == 2);
  CHECK(o.output.find("/nonexistent/scenario.yaml: cannot open") != std::string::npos);
}

TEST_CASE("an unknown option exits with code 2") {
  CHECK(tagcsim("run scenarios/quickstart.yaml --formt json").code == 2);
  CHECK(tagcsim("collective --cluster dgx-h100-ib400 --op all_scatter").code == 2);
}

TEST_CASE("tagcsim collective prints time, algbw and busbw the nccl-tests way, with NCCL's choices") {
  const auto o = tagcsim("collective --cluster dgx-h100-ib400 --op all_gather --bytes 1GiB --gpus 16");
  CHECK(o.code == 0);
  CHECK(o.output.find("busbw GB/s") != std::string::npos);
  CHECK(o.output.find("1073741824") != std::string::npos);
  CHECK(o.output.find("proto") != std::string::npos);
  CHECK(o.output.find(" ring ") != std::string::npos);
  CHECK(o.output.find("# LL128 left out: all-gathers and reduce-scatters across nodes run Simple") != std::string::npos);
  // LL128 asked for: it runs, and nothing was left out.
  CHECK(tagcsim("collective --cluster dgx-h100-ib400 --op all_gather --bytes 16MiB --gpus 16 --protocol ll128")
            .output.find("LL128 left out") == std::string::npos);
  // A small all-reduce on one node: LL on a ring; a large one: NVLink SHARP.
  const auto ar = tagcsim("collective --cluster dgx-h100-ib400 --op all_reduce --bytes 8KiB,8GiB --gpus 8");
  CHECK(ar.code == 0);
  CHECK(ar.output.find(" ring     LL ") != std::string::npos);
  CHECK(ar.output.find(" nvls Simple  16") != std::string::npos);
  const auto pinned = tagcsim("collective --cluster aws-p4de --op all_reduce --bytes 8KiB --gpus 16");
  CHECK(pinned.output.find("# pinned: proto simple (aws-ofi-nccl") != std::string::npos);
  CHECK(tagcsim("collective --cluster dgx-h100-ib400 --protocol LL256").code == 2);
  // An all-to-all is point to point: no algorithm to pin, its own note instead of the rings' error.
  const auto a2a = tagcsim("collective --cluster dgx-h100-ib400 --op alltoall --bytes 1KiB,1GiB --gpus 16");
  CHECK(a2a.code == 0);
  CHECK(a2a.output.find("      p2p     LL ") != std::string::npos);
  CHECK(a2a.output.find("      p2p Simple ") != std::string::npos);
  CHECK(a2a.output.find("# all-to-all: point-to-point sends and receives") != std::string::npos);
  CHECK(a2a.output.find("# held out") == std::string::npos);
  const auto pinned_a2a = tagcsim("collective --cluster dgx-h100-ib400 --op alltoall --algorithm ring");
  CHECK(pinned_a2a.code == 2);
  CHECK(pinned_a2a.output.find("--algorithm: an alltoall is point to point") != std::string::npos);
  // --gpus 0 is a mistake, not "the preset's size".
  const auto none = tagcsim("collective --cluster dgx-h100-ib400 --gpus 0");
  CHECK(none.code == 2);
  CHECK(none.output.find("--gpus: expected an integer >= 1, got 0") != std::string::npos);
}

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// The shipped tables of a few sources, for the leave-one-out runs: refitting without each of all
// the sources takes a minute. Entries are the file's "- id:" blocks; each names its source's key.
std::string published_subset(std::initializer_list<const char*> refs) {
  const std::string all = read_all(std::string(TAGCSIM_SOURCE_DIR) + "/validation/data/published_measurements.yaml");
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
  const std::string path = kTmp + "published_subset.yaml";
  std::ofstream(path) << out << tail;
  return path;
}

TEST_CASE("a table marked not_fitted is validated, predicted by the fit to the others, and in no fit") {
  // S02 (DGX H100, 32 points) and CoreWeave's GB200 NVL72 tables (S64, marked not_fitted).
  const std::string subset = published_subset({"S02", "S64"});
  const auto fitted = tagcsim("calibrate published --all --priors --data " + subset);
  CHECK(fitted.code == 0);
  CHECK(fitted.output.find("nccl-gb200-nvl72-1r-coreweave-allreduce: validated, not fitted: ") != std::string::npos);
  CHECK(fitted.output.find(", 32 points") != std::string::npos);  // S02's alone
  const auto v = tagcsim("calibrate validate --data " + subset);
  CHECK(v.code == 0);
  CHECK(v.output.find("held out (source S64 left out)") != std::string::npos);
  // Without S02 nothing is left to fit: S02 gets no held-out prediction.
  CHECK(v.output.find("held out (source S02 left out)") == std::string::npos);
}

TEST_CASE("calibrate validate runs on the shipped tables without --data, its held-out folds in parallel") {
  const auto o = tagcsim("calibrate validate --loo none");
  CHECK(o.code == 0);
  CHECK(o.output.find("nccl-a100-1n-mleng-allreduce") != std::string::npos);
  CHECK(o.output.find("nccl-h100-4n-voltagepark-ib-allgather") != std::string::npos);
  CHECK(o.output.find("cluster: {preset: dgx-b200-ib400, nodes: 2}") != std::string::npos);  // Lambda's B200
  CHECK(o.output.find("not found") == std::string::npos);
  // With the 5 of Azure's GB200 VM, 5 of CSCS's Alps, 15 of the shared 4-GPU H100 host's three tables (S97) and
  // 5 of OCI's two GB200 racks (S99), 5 of the H200 node's NCCL 2.26.2 rerun (S100) and 20 of the quiet 8-GPU
  // H100 node's four tables (S101).
  CHECK(o.output.find("  32 KiB-1 MiB    preset n=143") != std::string::npos);
  // Per table and size band, with each source left out in turn (three sources: S02, S12, S43).
  const std::string subset = published_subset({"S02", "S12", "S43"});
  const std::string held_file = kTmp + "held_out.yaml";
  const auto loo = tagcsim("calibrate validate --data " + subset + " --write-held-out " + held_file);
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
    std::ifstream in(held_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
  CHECK(tagcsim("calibrate validate -j 1 --data " + subset).output == loo.output);
  CHECK(tagcsim("calibrate validate -j 3 --data " + subset).output == loo.output);
  CHECK(tagcsim("calibrate validate --loo table --data " + subset).output.find(
            "held out (table nccl-h100-1n-dgxc-allreduce left out)") != std::string::npos);
  CHECK(tagcsim("calibrate validate --loo sources").code == 2);
  CHECK(tagcsim("calibrate validate --loo none --write-held-out " + kTmp + "h.yaml").output ==
        "tagcsim: error: --write-held-out: needs the held-out fits; not with --loo none\n");
  CHECK(tagcsim("calibrate validate --write-held-out /nonexistent-dir/h.yaml").output ==
        "tagcsim: error: --write-held-out: cannot write '/nonexistent-dir/h.yaml': no folder '/nonexistent-dir'\n");
  std::remove(subset.c_str());
}

namespace {

bool one_error_line(const Outcome& o) {
  return o.code == 2 && o.output.rfind("tagcsim: error: ", 0) == 0 && o.output.find('\n') == o.output.size() - 1;
}

const char* kSmall = "name: small\nmodel: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
                     "training: {micro_batch: 1, seq_len: 2048}\n";

}  // namespace

TEST_CASE("cli: a bare-number bandwidth is refused with the unit it probably meant") {
  const auto path = write_temp("bare.yaml", "model: llama2-7b\ncluster:\n  preset: aws-p4de\n  nics: {bandwidth: 400}\n");
  const auto o = tagcsim("run " + path);
  CHECK(one_error_line(o));
  CHECK(o.output.find(path + ":4: cluster.nics.bandwidth: expected a bandwidth with a unit, got '400' (did you mean "
                             "'400 Gb/s'? a bare number would be 400 B/s)") != std::string::npos);
  const auto typo = write_temp("typo.yaml", "model: llama2-7b\ncluster:\n  preset: aws-p4de\n  nics: {bandwidth: 400 Gbit}\n");
  const auto t = tagcsim("run " + typo);
  CHECK(one_error_line(t));
  CHECK(t.output.find("unknown unit 'Gbit' (did you mean '400 Gbit/s'?") != std::string::npos);
}

TEST_CASE("cli: a row whose gradient error is 1 or more is marked, its speedup in parentheses") {
  const auto o = tagcsim("run scenarios/quickstart.yaml");
  CHECK(o.code == 0);
  // tagc as published (1-bit SUM index) over 32 ranks: the decoded gradient is noise.
  std::string tagc_row;
  std::stringstream ss(o.output);
  for (std::string line; std::getline(ss, line);)
    if (line.rfind("tagc ", 0) == 0) tagc_row = line;
  REQUIRE(!tagc_row.empty());
  CHECK(tagc_row.find("x) !") != std::string::npos);   // the speedup, in parentheses and marked
  CHECK(tagc_row.size() >= 2);
  CHECK(tagc_row.substr(tagc_row.size() - 2) == " !");  // the grad error cell
  CHECK(o.output.find("\n! gradient is noise: expected gradient error up to ") != std::string::npos);
}

TEST_CASE("cli: --resolved prints YAML that runs as is and gives byte-identical results") {
  for (const char* scenario : {"scenarios/quickstart.yaml", "scenarios/tagc-paper.yaml"}) {
    CAPTURE(scenario);
    const auto resolved = tagcsim(std::string("run ") + scenario + " --resolved");
    REQUIRE(resolved.code == 0);
    CHECK(resolved.output.find("preset:") == std::string::npos);  // presets expanded
    CHECK(resolved.output.find("bandwidth: ") != std::string::npos);
    const auto path = write_temp("resolved.yaml", resolved.output);
    for (const char* format : {"table", "csv"}) {
      const auto a = tagcsim(std::string("run ") + scenario + " --format " + format);
      const auto b = tagcsim("run " + path + " --format " + format);
      CHECK(a.code == 0);
      CHECK(a.output == b.output);
    }
  }
}

TEST_CASE("cli: show lists presets and prints one with every value, its unit and its source") {
  const auto all = tagcsim("show");
  CHECK(all.code == 0);
  CHECK(all.output.find("llama3.1-8b") != std::string::npos);
  CHECK(all.output.find("aws-p4de") != std::string::npos);
  CHECK(all.output.find("h100-sxm") != std::string::npos);
  // Each preset says how its predictions did on published measurements it was not fitted to: a
  // cluster its collectives across nodes, a GPU its training fit (or whose it borrows).
  const auto row = [&](const std::string& name) {
    const auto at = all.output.find("\n  " + name + " ");
    REQUIRE(at != std::string::npos);
    return all.output.substr(at + 1, all.output.find('\n', at + 1) - at - 1);
  };
  CHECK(all.output.find("held out (1)") != std::string::npos);
  CHECK(row("dgx-h100-ib400").find(" ib ") != std::string::npos);
  CHECK(row("dgx-h100-ib400").find("% <=8 ") != std::string::npos);  // S50's 8 nodes, the widest table
  CHECK(row("aws-p5").find("% <=2 ") != std::string::npos);
  CHECK(row("eth-25g").find(" - ") != std::string::npos);  // no published table crosses TCP sockets
  CHECK(row("h100-sxm").find(" rows, ") != std::string::npos);
  CHECK(row("h100-sxm").find(" src, ") != std::string::npos);
  CHECK(row("b300").find("as blackwell") != std::string::npos);  // the B200's profile, which one source fits not
  CHECK(row("a100-40gb").find(" rows, 2 src, ") != std::string::npos);
  CHECK(row("v100-32gb").find("roofline") != std::string::npos);
  const auto p4de = tagcsim("show clusters p4de");  // an alias
  CHECK(p4de.code == 0);
  CHECK(p4de.output.find("# cluster preset aws-p4de (also: p4de") != std::string::npos);
  CHECK(p4de.output.find("\n# collectives over efa, held out: 3 nccl-tests tables of 1 source on 2 nodes, each source "
                         "held out of the fit: >= 1 MiB median ") != std::string::npos);
  CHECK(tagcsim("show gpus h100").output.find("\n# training fit: 103 rows of 17 sources, each "
                                              "source held out of the fit: median ") != std::string::npos);
  CHECK(tagcsim("show gpus gb200").output.find("\n# training fit: 10 rows of 2 sources, each "
                                               "source held out of the fit: median ") != std::string::npos);
  CHECK(tagcsim("show gpus b300").output.find("\n# training fit: none of its own: "
                                              "blackwell's fit (its family's) (docs/validation.md)\n") !=
        std::string::npos);
  CHECK(p4de.output.find("bandwidth: 100 Gb/s") != std::string::npos);
  CHECK(p4de.output.find("4 x 100 Gb/s = 400 Gb/s per node") != std::string::npos);
  CHECK(p4de.output.find("source: \"AWS p4de.24xlarge") != std::string::npos);
  // What show prints is YAML a scenario takes as is.
  const auto path = write_temp("shown.yaml", "model: llama3-8b\n" + p4de.output.substr(p4de.output.find('\n') + 1));
  const auto a = tagcsim("run " + path + " --format csv");
  const auto b = tagcsim("run " + write_temp("preset.yaml", "model: llama3.1-8b\ncluster: aws-p4de\n") + " --format csv");
  CHECK(a.code == 0);
  CHECK(a.output == b.output);
  const auto bad = tagcsim("show Llama3.1-8B");
  CHECK(one_error_line(bad));
  CHECK(bad.output.find("did you mean 'llama3.1-8b'?") != std::string::npos);
  // A Hugging Face config.json: the model it describes, as YAML a scenario takes.
  const auto config = write_temp("config.json", R"({"model_type": "qwen3", "hidden_size": 1024,
    "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": true, "max_position_embeddings": 40960})");
  const auto hf = tagcsim("show models " + config);
  CHECK(hf.code == 0);
  CHECK(hf.output.find("# 0.596B parameters") != std::string::npos);  // Qwen3 0.6B: 596,049,920
  CHECK(hf.output.find("qk_norm: true") != std::string::npos);
  const auto unknown = tagcsim("show " + write_temp("other.json", "{\"model_type\": \"bert\"}\n"));
  CHECK(one_error_line(unknown));
  CHECK(unknown.output.find("model_type: 'bert' is not an architecture tagcsim reads") != std::string::npos);
}

TEST_CASE("cli: aliases resolve: llama3-8b, p4de, dgx-h100") {
  const auto path = write_temp("alias.yaml", "model: llama3-8b\ncluster: p4de\n");
  const auto o = tagcsim("run " + path);
  CHECK(o.code == 0);
  CHECK(o.output.find(": llama3.1-8b (8.03B params, 33 FSDP units) on 2 x aws-p4de = 16 x A100-SXM4-80GB") !=
        std::string::npos);
  CHECK(o.output.find("between nodes: 4 x 100 Gb/s = 400 Gb/s per node, efficiency") != std::string::npos);
  CHECK(tagcsim("collective --cluster dgx-h100 --bytes 1MiB").code == 0);
}

TEST_CASE("cli: rows of one policy with different settings have distinct labels") {
  const auto path = write_temp("labels.yaml", std::string(kSmall) +
                                                  "policies: [fsdp, tagc-batched, {name: tagc-batched, index: 4bit-sum}]\n");
  const auto o = tagcsim("run " + path + " --format csv");
  CHECK(o.code == 0);
  CHECK(o.output.find("\ntagc-batched,tagc-batched,8,") != std::string::npos);
  CHECK(o.output.find("\ntagc-batched[index=4bit-sum],tagc-batched,8,") != std::string::npos);
}

TEST_CASE("cli: a zip sweep advances its keys together") {
  const auto path = write_temp("zip.yaml", std::string(kSmall) +
                                               "sweep:\n  zip:\n    cluster.nodes: [1, 2]\n"
                                               "    training.grad_accumulation: [2, 1]\n");
  const auto o = tagcsim("run " + path + " --format csv");
  CHECK(o.code == 0);
  // Two rows, not four: (1 node, 2 micro-batches) and (2 nodes, 1), both 16 sequences per step.
  CHECK(o.output.rfind("cluster.nodes,training.grad_accumulation,policy,", 0) == 0);
  CHECK(o.output.find("\n1,2,fsdp,fsdp,8,") != std::string::npos);
  CHECK(o.output.find("\n2,1,fsdp,fsdp,16,") != std::string::npos);
  CHECK(std::count(o.output.begin(), o.output.end(), '\n') == 3);
}

TEST_CASE("cli: --plot takes a metric, and refuses an extension it cannot write") {
  const auto path = write_temp("plot.yaml", std::string(kSmall) + "sweep:\n  cluster.nodes: [1, 2]\n");
  const auto jpg = tagcsim("run " + path + " --plot " + kTmp + "plot.jpg");
  CHECK(one_error_line(jpg));
  CHECK(jpg.output.find("expected a file name ending in .png, .svg or .pdf (not .jpg)") != std::string::npos);
  const auto metric = tagcsim("run " + path + " --plot " + kTmp + "plot.svg --plot-metric tokens");
  CHECK(one_error_line(metric));
  CHECK(metric.output.find("did you mean 'tokens-per-gpu'?") != std::string::npos);
  // Drawn when gnuplot is there (scripts/install-deps.sh installs it).
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    const std::string svg = kTmp + "plot_mfu.svg";
    std::remove(svg.c_str());
    const auto o = tagcsim("run " + path + " --plot " + svg + " --plot-metric mfu");
    CHECK(o.code == 0);
    CHECK(read_all(svg).find("MFU (%)") != std::string::npos);
  }
}

TEST_CASE("cli: --trace writes one file per sweep point, named by it, each policy its own process") {
  const auto path = write_temp("trace.yaml", std::string(kSmall) + "policies: [fsdp, tagc-batched]\n"
                                                                   "sweep:\n  cluster.nodes: [1, 2]\n");
  for (const std::string& f : {kTmp + "step.nodes=1.json", kTmp + "step.nodes=2.json",
                        kTmp + "step.1.json"})
    std::remove(f.c_str());
  const auto o = tagcsim("run " + path + " --trace " + kTmp + "step.json");
  CHECK(o.code == 0);
  for (const std::string& f : {kTmp + "step.nodes=1.json", kTmp + "step.nodes=2.json"}) {
    CAPTURE(f);
    const auto trace = read_all(f);
    CHECK(trace.find("\"pid\":0,\"args\":{\"name\":\"fsdp\"}") != std::string::npos);
    CHECK(trace.find("\"pid\":1,\"args\":{\"name\":\"tagc-batched\"}") != std::string::npos);
  }
  CHECK(read_all(kTmp + "step.1.json").empty());  // no numbered files
}

TEST_CASE("cli: the line of an error in compression settings, and of a misspelt sweep key") {
  const auto c = write_temp("compression.yaml", std::string(kSmall) +
                                                    "policies: [tagc]\ncompression:\n  ratio: 2\n  ratioo: 3\n"
                                                    "sweep:\n  cluster.nodes: [1, 2]\n");
  const auto o = tagcsim("run " + c);
  CHECK(one_error_line(o));
  CHECK(o.output.find(c + ":8: compression.ratioo: ") != std::string::npos);  // was :1:
  const auto s = write_temp("sweepkey.yaml", std::string(kSmall) + "sweep:\n  cluster.nodez: [1, 2]\n");
  const auto t = tagcsim("run " + s);
  CHECK(one_error_line(t));
  CHECK(t.output.rfind("tagcsim: error: " + s + ":6: sweep.cluster.nodez: unknown key (did you mean 'nodes'?)", 0) == 0);
  CHECK(t.output.find(":1:") == std::string::npos);  // no second location at line 1
}

TEST_CASE("cli: YAML, block and sweep mistakes are one plain line with exit code 2") {
  const std::pair<const char*, const char*> cases[] = {
      {"model: llama2-7b\ncluster:\n\tpreset: dgx-h100-ib400\n", ":3: not valid YAML (illegal map value): this line is indented with a tab"},
      {"model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n   nodes: 4\n", ":4: not valid YAML (illegal map value): this key is indented more"},
      {"model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\nnodes: 4\n", ":4: nodes: unknown key at the top level; it is a key of cluster: (did you mean 'cluster.nodes'?"},
      {"model: llama2-7b\nsweep:\n  cluster.nodes: [2, 4]\n", ":3: sweep.cluster.nodes: the scenario has no 'cluster:'"},
      {"model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nics: {bandwidth: 400 gb/s}\n", "(did you mean '400 GB/s' or '400 Gb/s'?"},
  };
  for (const auto& [yaml, expected] : cases) {
    CAPTURE(yaml);
    const auto path = write_temp("mistake.yaml", yaml);
    const auto o = tagcsim("run " + path);
    CHECK(one_error_line(o));
    CHECK(o.output.find(expected) != std::string::npos);
  }
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
  const auto o = tagcsim("calibrate nccl-tests " + a + " " + b + " --cluster dgx-h100-ib400 --held-out");
  REQUIRE(o.code == 0);
  auto median_of = [&](const std::string& file) {
    const auto at = o.output.find("#   " + file + ": < 1 MiB median ");
    REQUIRE(at != std::string::npos);
    return std::stod(o.output.substr(at + file.size() + 20));
  };
  CHECK(std::abs(median_of(a) - 47.6) < 1.5);
  CHECK(std::abs(median_of(b) - 32.3) < 1.5);
  CHECK(o.output.find("#   all logs: < 1 MiB median ") != std::string::npos);
  CHECK(tagcsim("calibrate nccl-tests " + a + " --cluster dgx-h100-ib400 --held-out").output ==
        "tagcsim: error: --held-out: needs two or more logs, each predicted by a fit to the others\n");
}

TEST_CASE("cli: tagcsim collective prints the GPU and node count, also without --gpus") {
  const auto o = tagcsim("collective --cluster aws-p4de --op all_reduce --bytes 1MiB");
  CHECK(o.code == 0);
  CHECK(o.output.rfind("# all_reduce on aws-p4de: 2 nodes x 8 GPUs = 16 GPUs (the preset's size; --gpus N to change)", 0) == 0);
  // Beside it, how the model did on the published EFA tables when each was held out of the fit.
  CHECK(o.output.find("\n# held out, on published tables over efa: 3 nccl-tests tables of 1 source on 2 nodes, each source held "
                      "out of the fit: >= 1 MiB median ") != std::string::npos);
  CHECK(o.output.find("# past the tables") == std::string::npos);  // S12's EFA tables are of 2 nodes too
  CHECK(tagcsim("collective --cluster aws-p4de --bytes 1MiB --gpus 32").output.find(
            "\n# past the tables: those span at most 2 nodes, this one 4; the latency its ring's extra steps add is "
            "NCCL's and the transport's per-step costs extrapolated (docs/calibration.md)\n") != std::string::npos);
  CHECK(tagcsim("collective --cluster aws-p4de --bytes 1MiB --gpus 8").output.find(
            "# held out, on published tables on one node, nvlink3: 2 nccl-tests tables of 2 sources") != std::string::npos);
  CHECK(tagcsim("collective --cluster eth-25g --bytes 1MiB").output.find("# held out") == std::string::npos);
  const auto j = tagcsim("collective --cluster aws-p4de --bytes 1MiB --gpus 32 --format json");
  CHECK(j.output.find("\"nodes\": 4, \"gpus_per_node\": 8, \"ranks\": 32") != std::string::npos);
  // NCCL's own estimate beside the time: on one A100 node a 64 MiB Simple ring pays 28 slice flags
  // of NVLink3's 5.14 us and its 14 steps NVLink3's 0.061 us each that the tuner does not see.
  const auto t = tagcsim("collective --cluster dgx-a100-ib200 --op all_reduce --bytes 64MiB --gpus 8 --format json");
  const auto at = [&](const std::string& key) {
    const auto p = t.output.find("\"" + key + "\": ");
    return p == std::string::npos ? -1.0 : std::stod(t.output.substr(p + key.size() + 4));
  };
  CHECK(at("time_s") - at("tuner_s") == doctest::Approx(28 * 5.144e-6 + 14 * 0.06091e-6).epsilon(2e-3));  // to the printed digits
}

TEST_CASE("tagcsim validate prints predicted against measured, a row's scenario runs, and its folds run side by side") {
  const auto o = tagcsim("validate --only 'fsdp-mpt7b-a100-40gb-8gpu-seq2048'");
  CHECK(o.code == 0);
  CHECK(o.output.find("| fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT | S31 | MPT-7b | 8 | 2048 | 3679 |") !=
        std::string::npos);
  CHECK(o.output.find("| fitted on all rows (in-sample) | 1 |") != std::string::npos);
  const auto s = tagcsim("validate --scenario fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT");
  CHECK(s.code == 0);
  const auto path = write_temp("row.yaml", s.output);
  const auto r = tagcsim("run " + path);
  CHECK(r.code == 0);
  CHECK(r.output.find("kernel profile device-a100-40gb") != std::string::npos);
  CHECK(tagcsim("validate --write").code == 2);  // --write only with --fit
  const auto regex = tagcsim("validate --only '(['");
  CHECK(regex.code == 2);
  CHECK(regex.output.find("tagcsim: error: --only: '([' is not a regular expression") != std::string::npos);
  // Leave one source out: each fold in its own process, side by side; the report is the same byte
  // for byte as one fold after another in this process.
  const std::string two = "validate --loso --only 'fsdp-tt-llama3-70b|fsdp-mpt7b-a100-40gb-8gpu-seq2048'";
  const auto seq = tagcsim(two + " -j 1"), par = tagcsim(two + " -j 2");
  CHECK(seq.code == 0);
  CHECK(seq.output.find("| S35 held out | 1 |") != std::string::npos);
  CHECK(seq.output.find("| S31 held out | 1 |") != std::string::npos);
  CHECK(par.output == seq.output);
  CHECK(tagcsim("validate --loso -j -1").code == 2);
  CHECK(tagcsim("validate --scenario nope").output.find("--scenario: no validation row 'nope'") != std::string::npos);
}
