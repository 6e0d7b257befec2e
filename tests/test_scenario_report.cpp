// What a run of a scenario reports: the table, JSON and CSV (held to docs/output.md, key for key,
// and byte-identical from run to run), the notes and caveats a reader needs to trust a row, the
// plots, the kernel table, and the resolved YAML every shipped scenario must round-trip through.
#include "command_testing.hpp"  // read_text
#include "scenario_testing.hpp"
#include "scenarios/plot.hpp"
#include "scenarios/report.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/collective.hpp"
#include "sim/compute.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>
#include <sstream>

using namespace tagcsim;
using namespace tagcsim::scenarios;
using namespace tagcsim::test;  // parse, report_table

TEST_CASE("the same scenario gives byte-identical reports") {
  const auto s = parse("policies: [fsdp]\n");
  const auto a = format_results(s, run(s), Format::Json);
  const auto b = format_results(s, run(s), Format::Json);
  CHECK(a == b);
  CHECK(a.find("\"step_time_s\"") != std::string::npos);
}

TEST_CASE("a scenario that does not fit in GPU memory says so, with the numbers") {
  // Llama-2 70B on 8 GPUs: 68.98e9 params x 12 bytes (fp32 parameter shards, AdamW's two moments)
  // / 8 = 96.4 GiB of persistent sharded state alone; the peak comes in the first backward (the
  // unsharded layers and activations), before any fp32 gradient shard exists.
  const auto s = parse_scenario("model: llama2-70b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n", "t.yaml");
  const auto results = run(s);
  REQUIRE(results.size() == 1);
  const auto& m = results[0].step.memory;
  CHECK_FALSE(m.fits());
  CHECK(m.sharded_state_bytes / (1024.0 * 1024 * 1024) == doctest::Approx(96.36).epsilon(0.001));
  const auto table = format_results(s, results, Format::Table);
  CHECK(table.find("! does not fit in GPU memory: needs up to") != std::string::npos);
  CHECK(format_results(s, results, Format::Json).find("\"fits_in_memory\": false") != std::string::npos);
}

TEST_CASE("512 A100 on SuperPOD leaves of 20 nodes run, and the heading says the last leaf is partly filled") {
  const auto s = parse_scenario("model: mpt-1b\ncluster: {preset: dgx-a100-ib200, nodes: 64}\n"
                                "training: {micro_batch: 4, seq_len: 2048}\n", "t.yaml");
  const auto results = run(s);
  REQUIRE(results.size() == 1);
  CHECK(results[0].step.step_time_s > 0);
  const auto table = format_results(s, results, Format::Table);
  CHECK(table.find("2-level fat tree, 20 nodes per leaf (the last of 4 leaves holds 4)") != std::string::npos);
}

TEST_CASE("the report says what NCCL's SMs cost the compute stream, and a roofline GPU loses nothing") {
  // Llama-2 7B on 4 DGX H100 nodes: the all-gathers and reduce-scatters overlap the compute, and each
  // holds 32 of 132 SMs while in flight. What the compute stream lost is its tasks' replayed time
  // beyond their kernel time.
  const auto s = parse_scenario("model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 4}\n", "t.yaml");
  const auto results = run(s);
  REQUIRE(results.size() == 1);
  const auto& st = results[0].step;
  double lost = 0;
  for (std::size_t i = 0; i < st.schedule.tasks.size(); ++i) {
    const auto& t = st.schedule.tasks[i];
    const double d = st.replay.timings[i].end - st.replay.timings[i].start;
    if (t.stream == sim::Stream::Compute && t.phases.empty() && d - t.seconds > 1e-9) lost += d - t.seconds;
  }
  CHECK(st.breakdown.sm_slowdown_s == doctest::Approx(lost).epsilon(1e-9));
  CHECK(st.breakdown.sm_slowdown_s > 0.01 * st.breakdown.compute_s);
  CHECK(format_results(s, results, Format::Table).find("SMs held by NCCL, fsdp: the compute stream's kernels") !=
        std::string::npos);
  const auto roofline = parse_scenario(
      "model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 4, gpu: {profile: ''}}\n", "t.yaml");
  const auto plain = run(roofline);
  CHECK(plain[0].step.breakdown.sm_slowdown_s == 0);
  CHECK(format_results(roofline, plain, Format::Table).find("SMs held by NCCL") == std::string::npos);
}

TEST_CASE("the heading quotes how the collective model did, held out, on tables connected like the cluster") {
  auto table = [](const std::string& cluster) {
    return report_table("model: gpt2-124m\ncluster: " + cluster + "\n");
  };
  const std::string ib = topologies::collective_held_out("ib"), one = topologies::collective_held_out("one_node_nvlink4");
  REQUIRE(!ib.empty());
  REQUIRE(!one.empty());
  CHECK(table("{preset: dgx-h100-ib400, nodes: 2}").find("\n  collectives: NCCL's tuner and cost model over ib (" + ib +
                                                          ")\n") != std::string::npos);
  CHECK(table("{preset: dgx-h100-ib400, nodes: 2, nics: {transport: roce}}")
            .find("cost model over roce (" + topologies::collective_held_out("roce") + ")") != std::string::npos);
  CHECK(table("{preset: dgx-h100-ib400, nodes: 1}")
            .find("\n  collectives: NCCL's tuner and cost model on one node, nvlink4 (" + one + ")\n") != std::string::npos);
  // One GPU runs no collective; no published table crosses sockets: no line. One node of NVLink5 quotes
  // Azure's 4-GPU GB200 VM, the one such table (predicted, not fitted).
  CHECK(table("{preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 1}").find("  collectives:") == std::string::npos);
  CHECK(table("{preset: eth-25g, nodes: 2}").find("  collectives:") == std::string::npos);
  const std::string nvlink5 = topologies::collective_held_out("one_node_nvlink5");
  REQUIRE(!nvlink5.empty());
  CHECK(table("{preset: dgx-b200-ib400, nodes: 1}")
            .find("\n  collectives: NCCL's tuner and cost model on one node, nvlink5 (" + nvlink5 + ")\n") != std::string::npos);
}

TEST_CASE("a sweep plots as one curve per policy along the first swept key") {
  const auto s = parse("policies: [fsdp, tagc-batched]\nsweep:\n  cluster.nodes: [1, 2]\n");
  const auto results = run(s);
  const auto g = gnuplot_script(s, results, "out.png");
  CHECK(g.find("set output \"out.png\"") != std::string::npos);
  CHECK(g.find("set xlabel \"cluster.nodes\"") != std::string::npos);
  CHECK(g.find("title \"fsdp\" linecolor") != std::string::npos);
  CHECK(g.find("title \"tagc-batched\" linecolor") != std::string::npos);
  CHECK(g.find("speedup over plain FSDP") != std::string::npos);
  CHECK_THROWS_WITH_AS(gnuplot_script(parse(""), run(parse("")), "x.png"), doctest::Contains("--plot needs a 'sweep:'"),
                       InputError);
}

TEST_CASE("a row whose gradient error is 1 or more is marked, and its speedup is not offered as a win") {
  // tagc's 1-bit SUM index over 32 ranks decodes mostly noise (its warning says so).
  const auto s = parse("policies: [fsdp, tagc]\n");
  const auto results = run(s);
  REQUIRE(results.size() == 2);
  REQUIRE(results[1].step.expected_grad_error >= 1);
  const auto table = format_results(s, results, Format::Table);
  const double sp = results[0].step.step_time_s / results[1].step.step_time_s;
  CHECK(table.find(fmt::format("({:.3f}x) !", sp)) != std::string::npos);
  CHECK(table.find(fmt::format("{:.2g} !", results[1].step.expected_grad_error)) != std::string::npos);
  CHECK(table.find("! gradient is noise: expected gradient error up to") != std::string::npos);
  const auto json = format_results(s, results, Format::Json);
  CHECK(json.find("\"gradient_is_noise\": true") != std::string::npos);
  CHECK(json.find("\"gradient_is_noise\": false") != std::string::npos);
  // The header states per-node totals.
  CHECK(table.find("between nodes: 8 x 400 Gb/s = 3200 Gb/s per node, efficiency") != std::string::npos);
  // And what a full node's channels carry of it (topologies/presets.cpp, net_channel_rate_of).
  CHECK(table.find("efficiency 0.9626, NCCL channels of at most 20.06 GB/s;") != std::string::npos);
}

TEST_CASE("a note is printed once, with the sweep points it belongs to") {
  // tagc's warning names the rank count: one per point; the others hold everywhere.
  const auto s = parse("policies: [{name: tagc, index: 1bit-sum}]\nsweep:\n  cluster.nodes: [1, 2]\n");
  const auto table = format_results(s, run(s), Format::Table);
  CHECK(table.find("note: (at cluster.nodes=1) warning: policy tagc: the 1-bit SUM index is lossy over 8 ranks") !=
        std::string::npos);
  CHECK(table.find("note: (at cluster.nodes=2) warning: policy tagc: the 1-bit SUM index is lossy over 16 ranks") !=
        std::string::npos);
  std::size_t count = 0;
  for (auto at = table.find("lossy over 8 ranks"); at != std::string::npos; at = table.find("lossy over 8 ranks", at + 1))
    ++count;
  CHECK(count == 1);
}

namespace {
// The names in the first cell of the markdown table under `## heading`.
std::vector<std::string> documented(const std::string& doc, const std::string& heading) {
  std::vector<std::string> out;
  auto at = doc.find("\n## " + heading + "\n");
  REQUIRE(at != std::string::npos);
  const auto end = doc.find("\n## ", at + 1);
  std::stringstream ss(doc.substr(at, end - at));
  for (std::string line; std::getline(ss, line);)
    if (line.rfind("| `", 0) == 0) out.push_back(line.substr(3, line.find('`', 3) - 3));
  return out;
}

void json_keys(const YAML::Node& n, std::set<std::string>& keys) {
  if (n.IsSequence())
    for (const auto& e : n) json_keys(e, keys);
  if (!n.IsMap()) return;
  for (const auto& kv : n) {
    const auto k = kv.first.as<std::string>();
    keys.insert(k);
    if (k == "point") continue;  // swept keys
    if (k == "collectives") {    // kinds of collective
      for (const auto& c : kv.second) json_keys(c.second, keys);
      continue;
    }
    json_keys(kv.second, keys);
  }
}
}  // namespace

TEST_CASE("docs/scenarios.md names every key the cluster and training blocks take") {
  const std::string doc = read_text(std::string(TAGCSIM_SOURCE_DIR) + "/docs/scenarios.md");
  for (const auto& key : topologies::cluster_keys()) CHECK_MESSAGE(doc.find("`" + key + "`") != std::string::npos, key);
  for (const auto& key : scenarios::training_keys()) CHECK_MESSAGE(doc.find("`" + key + "`") != std::string::npos, key);
}

TEST_CASE("docs/output.md explains every table column, JSON key and CSV column, and nothing else") {
  const std::string doc = read_text(std::string(TAGCSIM_SOURCE_DIR) + "/docs/output.md");
  const auto s = parse("policies: [fsdp, tagc-batched]\n");
  const auto results = run(s);
  // The table's header line, split at runs of two spaces.
  const auto table = format_results(s, results, Format::Table);
  const auto header_at = table.find("\npolicy ");
  REQUIRE(header_at != std::string::npos);
  const std::string header = table.substr(header_at + 1, table.find('\n', header_at + 1) - header_at - 1);
  std::vector<std::string> columns;
  std::stringstream hs(header);
  std::string cell, word;
  while (hs >> word) {
    const bool joined = !cell.empty() && header.find(cell + " " + word) != std::string::npos;
    if (!cell.empty() && !joined) columns.push_back(cell), cell.clear();
    cell += (cell.empty() ? "" : " ") + word;
  }
  columns.push_back(cell);
  CHECK(columns == table_columns());
  CHECK(documented(doc, "Table columns") == table_columns());

  std::set<std::string> keys;
  json_keys(YAML::Load(format_results(s, results, Format::Json)), keys);
  const auto doc_json = documented(doc, "JSON keys");
  CHECK(std::set<std::string>(doc_json.begin(), doc_json.end()) == keys);

  const auto csv = format_results(s, results, Format::Csv);
  std::vector<std::string> csv_columns;
  std::stringstream cs(csv.substr(0, csv.find('\n')));
  for (std::string c; std::getline(cs, c, ',');) csv_columns.push_back(c);
  CHECK(documented(doc, "CSV columns") == csv_columns);
}

TEST_CASE("the resolved YAML of every shipped scenario loads to the same setups, and resolves to itself") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TAGCSIM_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    CAPTURE(entry.path().string());
    const auto s = load_scenario(entry.path().string());
    const std::string yaml = resolved_yaml(s);
    const auto r = parse_scenario(yaml, "resolved.yaml");
    const auto again = resolved_yaml(r);
    CHECK(again.substr(again.find('\n')) == yaml.substr(yaml.find('\n')));  // all but the first line, the file name
    REQUIRE(r.points.size() == s.points.size());
    CHECK(r.name == s.name);
    CHECK(r.sweep_keys == s.sweep_keys);
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const auto &a = s.points[i].setup, &b = r.points[i].setup;
      CHECK(b.model.name == a.model.name);
      CHECK(models::parameter_count(b.model) == models::parameter_count(a.model));
      CHECK(b.cluster.gpus() == a.cluster.gpus());
      CHECK(b.cluster.nics.bandwidth == a.cluster.nics.bandwidth);  // exactly: the units are written exactly
      CHECK(b.cluster.gpu.peak_flops_bf16 == a.cluster.gpu.peak_flops_bf16);
      CHECK(b.cluster.gpu.memory_bytes == a.cluster.gpu.memory_bytes);
      CHECK(b.cluster.collectives.step_latency_inter == a.cluster.collectives.step_latency_inter);
      CHECK(b.training.grad_accumulation == a.training.grad_accumulation);
      CHECK(b.units.size() == a.units.size());
      REQUIRE(r.points[i].policies.size() == s.points[i].policies.size());
      for (std::size_t k = 0; k < s.points[i].policies.size(); ++k) {
        CHECK(r.points[i].policies[k].label == s.points[i].policies[k].label);
        CHECK(r.points[i].policies[k].ratio == s.points[i].policies[k].ratio);
        CHECK(r.points[i].policies[k].index == s.points[i].policies[k].index);
      }
    }
  }
}

TEST_CASE("plots: the metric chosen, y from 0, marked points, one colour per series in both panels") {
  const auto s = parse("policies: [fsdp, tagc-batched]\nsweep:\n  cluster.nodes: [1, 2]\n");
  const auto results = run(s);
  const auto g = gnuplot_script(s, results, "out.svg", PlotMetric::ScalingEfficiency);
  CHECK(g.find("set terminal svg") != std::string::npos);
  CHECK(g.find("set yrange [0:*]") != std::string::npos);
  CHECK(g.find("set key below Left reverse") != std::string::npos);
  CHECK(g.find("title \"scaling efficiency\"") != std::string::npos);
  // fsdp's first point is its own base: efficiency 1 at x = 0.
  CHECK(g.find("0 \"1\" 1\n") != std::string::npos);
  // tagc-batched is the second series: the same colour in the metric and the speedup panel.
  const std::string second = "title \"tagc-batched\" linecolor rgb '#D55E00'";
  const auto first_at = g.find(second);
  REQUIRE(first_at != std::string::npos);
  CHECK(g.find(second, first_at + 1) != std::string::npos);
  // tagc-batched decodes noise here: its points are circled, with a legend entry.
  CHECK(g.find("'! does not fit in memory, or gradient is noise'") != std::string::npos);
  CHECK(gnuplot_script(s, results, "out.pdf", PlotMetric::Mfu).find("set terminal pdfcairo") != std::string::npos);
  CHECK_THROWS_WITH_AS(gnuplot_script(s, results, "out.jpg"),
                       "--plot: cannot draw 'out.jpg': expected a file name ending in .png, .svg or .pdf (not .jpg)",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_plot_metric("tokens"), doctest::Contains("(did you mean 'tokens-per-gpu'?)"), InputError);
}

TEST_CASE("run --kernels: each unit kind's kernels add up to the GPU time the replay uses") {
  // Llama 2 7B on H100 with 2 x 4096 tokens: the 32 blocks share one kernel list, printed once; its
  // per-unit total is sim::unit_compute's forward + backward GPU seconds less FSDP1's gradient
  // concatenation (a copy of the unit's bf16 parameters each way, the schedule's, not the list's).
  const auto s = parse("");
  const auto& setup = s.points.front().setup;
  const std::string text = kernel_table(setup);
  CHECK(text.find("block.0 (32 units, to block.31)") != std::string::npos);
  CHECK(text.find("attn.q dgrad") != std::string::npos);
  int block = -1;
  for (std::size_t u = 0; u < setup.units.size(); ++u)
    if (setup.units[u].name == "block.0") block = int(u);
  REQUIRE(block >= 0);
  const auto c = sim::unit_compute(setup, block);
  const double concat = sim::memory_kernel_seconds(2.0 * double(setup.units[std::size_t(block)].params) * 2, setup.cluster.gpu);
  const auto at = text.find("per unit: ", text.find("block.0 ("));
  REQUIRE(at != std::string::npos);
  const double printed_ms = std::stod(text.substr(at + 10));
  CHECK(printed_ms == doctest::Approx((c.forward_seconds + c.backward_seconds - concat) * 1e3).epsilon(1e-3));
  // A 4096 x 4096 x 8192 wgrad is timed as the profile times it.
  const auto& prof = *sim::device_kernel_profile(setup.cluster.gpu);
  CHECK(text.find(fmt::format("{:>10.1f}", prof.gemm_seconds(4096, 4096, 8192) * 1e6)) != std::string::npos);
  // A GPU without a kernel profile is timed unit by unit from its datasheet, and says so.
  const auto l4 = parse_scenario("name: t\nmodel: gpt2-124m\ncluster: {preset: dgx-a100-ib200, nodes: 1, gpu: l4}\n"
                                 "training: {micro_batch: 2, seq_len: 1024}\n", "l4.yaml");
  CHECK(kernel_table(l4.points.front().setup).find("no kernel profile: every unit is timed by the datasheet roofline") !=
        std::string::npos);
}
