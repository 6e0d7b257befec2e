// The command line as a user meets it: exit codes and one-line errors.
#include "command_testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

TEST_CASE("bad scenario input exits with code 2 and one line naming file, line and key") {
  const auto path = write_temp("bad.yaml", "model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodez: 4}\n");
  const auto o = run_tagcsim("run " + path);
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
    const auto o = run_tagcsim("run " + path);
    CHECK(o.code == 2);
    CHECK(o.output.find(path + c.where) != std::string::npos);
    CHECK(o.output.find('\n') == o.output.size() - 1);  // one line
  }
}

TEST_CASE("a missing scenario file exits with code 2") {
  const auto o = run_tagcsim("run /nonexistent/scenario.yaml");
  CHECK(o.code == 2);
  CHECK(o.output.find("/nonexistent/scenario.yaml: cannot open") != std::string::npos);
}

TEST_CASE("an unknown option exits with code 2") {
  CHECK(run_tagcsim("run scenarios/quickstart.yaml --formt json").code == 2);
  CHECK(run_tagcsim("collective --cluster dgx-h100-ib400 --op all_scatter").code == 2);
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
  const auto o = run_tagcsim("run " + path);
  CHECK(one_error_line(o));
  CHECK(o.output.find(path + ":4: cluster.nics.bandwidth: expected a bandwidth with a unit, got '400' (did you mean "
                             "'400 Gb/s'? a bare number would be 400 B/s)") != std::string::npos);
  const auto typo = write_temp("typo.yaml", "model: llama2-7b\ncluster:\n  preset: aws-p4de\n  nics: {bandwidth: 400 Gbit}\n");
  const auto t = run_tagcsim("run " + typo);
  CHECK(one_error_line(t));
  CHECK(t.output.find("unknown unit 'Gbit' (did you mean '400 Gbit/s'?") != std::string::npos);
}

TEST_CASE("cli: a row whose gradient error is 1 or more is marked, its speedup in parentheses") {
  const auto o = run_tagcsim("run scenarios/quickstart.yaml");
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
    const auto resolved = run_tagcsim(std::string("run ") + scenario + " --resolved");
    REQUIRE(resolved.code == 0);
    CHECK(resolved.output.find("preset:") == std::string::npos);  // presets expanded
    CHECK(resolved.output.find("bandwidth: ") != std::string::npos);
    const auto path = write_temp("resolved.yaml", resolved.output);
    for (const char* format : {"table", "csv"}) {
      const auto a = run_tagcsim(std::string("run ") + scenario + " --format " + format);
      const auto b = run_tagcsim("run " + path + " --format " + format);
      CHECK(a.code == 0);
      CHECK(a.output == b.output);
    }
  }
}

TEST_CASE("cli: show lists presets and prints one with every value, its unit and its source") {
  const auto all = run_tagcsim("show");
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
  CHECK(row("dgx-h100-ib400").find("% <=10 ") != std::string::npos);  // S111's 10 nodes, the widest table
  CHECK(row("aws-p5").find("% <=2 ") != std::string::npos);
  CHECK(row("eth-25g").find(" - ") != std::string::npos);  // no published table crosses TCP sockets
  CHECK(row("h100-sxm").find(" rows, ") != std::string::npos);
  CHECK(row("h100-sxm").find(" src, ") != std::string::npos);
  CHECK(row("b300").find("as blackwell") != std::string::npos);  // the B200's profile, which one source fits not
  CHECK(row("a100-40gb").find(" rows, 2 src, ") != std::string::npos);
  CHECK(row("v100-32gb").find("roofline") != std::string::npos);
  const auto p4de = run_tagcsim("show clusters p4de");  // an alias
  CHECK(p4de.code == 0);
  CHECK(p4de.output.find("# cluster preset aws-p4de (also: p4de") != std::string::npos);
  CHECK(p4de.output.find("\n# collectives over efa, held out: 4 nccl-tests tables of 2 sources on 2 nodes, each source "
                         "held out of the fit: >= 1 MiB median ") != std::string::npos);
  CHECK(run_tagcsim("show gpus h100").output.find("\n# training fit: 112 rows of 21 sources, each "
                                              "source held out of the fit: median ") != std::string::npos);
  CHECK(run_tagcsim("show gpus gb200").output.find("\n# training fit: 10 rows of 2 sources, each "
                                               "source held out of the fit: median ") != std::string::npos);
  CHECK(run_tagcsim("show gpus b300").output.find("\n# training fit: none of its own: "
                                              "blackwell's fit (its family's) (docs/validation.md)\n") !=
        std::string::npos);
  CHECK(p4de.output.find("bandwidth: 100 Gb/s") != std::string::npos);
  CHECK(p4de.output.find("4 x 100 Gb/s = 400 Gb/s per node") != std::string::npos);
  CHECK(p4de.output.find("source: \"AWS p4de.24xlarge") != std::string::npos);
  // What show prints is YAML a scenario takes as is.
  const auto path = write_temp("shown.yaml", "model: llama3-8b\n" + p4de.output.substr(p4de.output.find('\n') + 1));
  const auto a = run_tagcsim("run " + path + " --format csv");
  const auto b = run_tagcsim("run " + write_temp("preset.yaml", "model: llama3.1-8b\ncluster: aws-p4de\n") + " --format csv");
  CHECK(a.code == 0);
  CHECK(a.output == b.output);
  const auto bad = run_tagcsim("show Llama3.1-8B");
  CHECK(one_error_line(bad));
  CHECK(bad.output.find("did you mean 'llama3.1-8b'?") != std::string::npos);
  // A Hugging Face config.json: the model it describes, as YAML a scenario takes.
  const auto config = write_temp("config.json", R"({"model_type": "qwen3", "hidden_size": 1024,
    "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": true, "max_position_embeddings": 40960})");
  const auto hf = run_tagcsim("show models " + config);
  CHECK(hf.code == 0);
  CHECK(hf.output.find("# 0.596B parameters") != std::string::npos);  // Qwen3 0.6B: 596,049,920
  CHECK(hf.output.find("qk_norm: true") != std::string::npos);
  const auto unknown = run_tagcsim("show " + write_temp("other.json", "{\"model_type\": \"bert\"}\n"));
  CHECK(one_error_line(unknown));
  CHECK(unknown.output.find("model_type: 'bert' is not an architecture tagcsim reads") != std::string::npos);
}

TEST_CASE("cli: aliases resolve: llama3-8b, p4de, dgx-h100") {
  const auto path = write_temp("alias.yaml", "model: llama3-8b\ncluster: p4de\n");
  const auto o = run_tagcsim("run " + path);
  CHECK(o.code == 0);
  CHECK(o.output.find(": llama3.1-8b (8.03B params, 33 FSDP units) on 2 x aws-p4de = 16 x A100-SXM4-80GB") !=
        std::string::npos);
  CHECK(o.output.find("between nodes: 4 x 100 Gb/s = 400 Gb/s per node, efficiency") != std::string::npos);
  CHECK(run_tagcsim("collective --cluster dgx-h100 --bytes 1MiB").code == 0);
}

TEST_CASE("cli: rows of one policy with different settings have distinct labels") {
  const auto path = write_temp("labels.yaml", std::string(kSmall) +
                                                  "policies: [fsdp, tagc-batched, {name: tagc-batched, index: 4bit-sum}]\n");
  const auto o = run_tagcsim("run " + path + " --format csv");
  CHECK(o.code == 0);
  CHECK(o.output.find("\ntagc-batched,tagc-batched,8,") != std::string::npos);
  CHECK(o.output.find("\ntagc-batched[index=4bit-sum],tagc-batched,8,") != std::string::npos);
}

TEST_CASE("cli: a zip sweep advances its keys together") {
  const auto path = write_temp("zip.yaml", std::string(kSmall) +
                                               "sweep:\n  zip:\n    cluster.nodes: [1, 2]\n"
                                               "    training.grad_accumulation: [2, 1]\n");
  const auto o = run_tagcsim("run " + path + " --format csv");
  CHECK(o.code == 0);
  // Two rows, not four: (1 node, 2 micro-batches) and (2 nodes, 1), both 16 sequences per step.
  CHECK(o.output.rfind("cluster.nodes,training.grad_accumulation,policy,", 0) == 0);
  CHECK(o.output.find("\n1,2,fsdp,fsdp,8,") != std::string::npos);
  CHECK(o.output.find("\n2,1,fsdp,fsdp,16,") != std::string::npos);
  CHECK(std::count(o.output.begin(), o.output.end(), '\n') == 3);
}

TEST_CASE("cli: --plot takes a metric, and refuses an extension it cannot write") {
  const auto path = write_temp("plot.yaml", std::string(kSmall) + "sweep:\n  cluster.nodes: [1, 2]\n");
  const auto jpg = run_tagcsim("run " + path + " --plot " + temp_path("plot.jpg"));
  CHECK(one_error_line(jpg));
  CHECK(jpg.output.find("expected a file name ending in .png, .svg or .pdf (not .jpg)") != std::string::npos);
  const auto metric = run_tagcsim("run " + path + " --plot " + temp_path("plot.svg --plot-metric tokens"));
  CHECK(one_error_line(metric));
  CHECK(metric.output.find("did you mean 'tokens-per-gpu'?") != std::string::npos);
  // Drawn when gnuplot is there (scripts/install-deps.sh installs it).
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    const std::string svg = temp_path("plot_mfu.svg");
    std::remove(svg.c_str());
    const auto o = run_tagcsim("run " + path + " --plot " + svg + " --plot-metric mfu");
    CHECK(o.code == 0);
    CHECK(read_text(svg).find("MFU (%)") != std::string::npos);
  }
}

TEST_CASE("cli: --trace writes one file per sweep point, named by it, each policy its own process") {
  const auto path = write_temp("trace.yaml", std::string(kSmall) + "policies: [fsdp, tagc-batched]\n"
                                                                   "sweep:\n  cluster.nodes: [1, 2]\n");
  for (const std::string& f : {temp_path("step.nodes=1.json"), temp_path("step.nodes=2.json"),
                        temp_path("step.1.json")})
    std::remove(f.c_str());
  const auto o = run_tagcsim("run " + path + " --trace " + temp_path("step.json"));
  CHECK(o.code == 0);
  for (const std::string& f : {temp_path("step.nodes=1.json"), temp_path("step.nodes=2.json")}) {
    CAPTURE(f);
    const auto trace = read_text(f);
    CHECK(trace.find("\"pid\":0,\"args\":{\"name\":\"fsdp\"}") != std::string::npos);
    CHECK(trace.find("\"pid\":1,\"args\":{\"name\":\"tagc-batched\"}") != std::string::npos);
  }
  CHECK(read_text(temp_path("step.1.json")).empty());  // no numbered files
}

TEST_CASE("cli: the line of an error in compression settings, and of a misspelt sweep key") {
  const auto c = write_temp("compression.yaml", std::string(kSmall) +
                                                    "policies: [tagc]\ncompression:\n  ratio: 2\n  ratioo: 3\n"
                                                    "sweep:\n  cluster.nodes: [1, 2]\n");
  const auto o = run_tagcsim("run " + c);
  CHECK(one_error_line(o));
  CHECK(o.output.find(c + ":8: compression.ratioo: ") != std::string::npos);  // was :1:
  const auto s = write_temp("sweepkey.yaml", std::string(kSmall) + "sweep:\n  cluster.nodez: [1, 2]\n");
  const auto t = run_tagcsim("run " + s);
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
    const auto o = run_tagcsim("run " + path);
    CHECK(one_error_line(o));
    CHECK(o.output.find(expected) != std::string::npos);
  }
}


TEST_CASE("tagcsim validate prints predicted against measured, a row's scenario runs, and its folds run side by side") {
  const auto o = run_tagcsim("validate --only 'fsdp-mpt7b-a100-40gb-8gpu-seq2048'");
  CHECK(o.code == 0);
  CHECK(o.output.find("| fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT | S31 | MPT-7b | 8 | 2048 | 3679 |") !=
        std::string::npos);
  CHECK(o.output.find("| fitted on all rows (in-sample) | 1 |") != std::string::npos);
  const auto s = run_tagcsim("validate --scenario fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT");
  CHECK(s.code == 0);
  const auto path = write_temp("row.yaml", s.output);
  const auto r = run_tagcsim("run " + path);
  CHECK(r.code == 0);
  CHECK(r.output.find("kernel profile device-a100-40gb") != std::string::npos);
  CHECK(run_tagcsim("validate --write").code == 2);  // --write only with --fit
  const auto regex = run_tagcsim("validate --only '(['");
  CHECK(regex.code == 2);
  CHECK(regex.output.find("tagcsim: error: --only: '([' is not a regular expression") != std::string::npos);
  // Leave one source out: each fold in its own process, side by side; the report is the same byte
  // for byte as one fold after another in this process.
  const std::string two = "validate --loso --only 'fsdp-tt-llama3-70b|fsdp-mpt7b-a100-40gb-8gpu-seq2048'";
  const auto seq = run_tagcsim(two + " -j 1"), par = run_tagcsim(two + " -j 2");
  CHECK(seq.code == 0);
  CHECK(seq.output.find("| S35 held out | 1 |") != std::string::npos);
  CHECK(seq.output.find("| S31 held out | 1 |") != std::string::npos);
  CHECK(par.output == seq.output);
  CHECK(run_tagcsim("validate --loso -j -1").code == 2);
  CHECK(run_tagcsim("validate --scenario nope").output.find("--scenario: no validation row 'nope'") != std::string::npos);
}
