// The command line as a user meets it: exit codes and one-line errors.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

struct Outcome {
  int code = -1;
  std::string output;
};

Outcome tagcsim(const std::string& args) {
  const std::string cmd = std::string(TAGCSIM_BINARY) + " " + args + " 2>&1";
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  while (fgets(buf.data(), int(buf.size()), p)) o.output += buf.data();
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/tagcsim_test_" + name;
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
                        "preset, name, nodes, gpus_per_node, gpu, intra_node, nics, fabric, collectives, source\n");
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

TEST_CASE("tagcsim collective prints time, algbw and busbw the nccl-tests way") {
  const auto o = tagcsim("collective --cluster dgx-h100-ib400 --op all_gather --bytes 1GiB --gpus 16");
  CHECK(o.code == 0);
  CHECK(o.output.find("busbw GB/s") != std::string::npos);
  CHECK(o.output.find("1073741824") != std::string::npos);
}

TEST_CASE("calibrate validate runs on the shipped tables without --data") {
  const auto o = tagcsim("calibrate validate");
  CHECK(o.code == 0);
  CHECK(o.output.find("nccl-a100-1n-mleng-allreduce") != std::string::npos);
  CHECK(o.output.find("not found") == std::string::npos);
}

TEST_CASE("tagcsim validate prints predicted against measured, and a row's scenario runs") {
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
  CHECK(tagcsim("validate --scenario nope").output.find("--scenario: no validation row 'nope'") != std::string::npos);
}
