#include "scenarios/report.hpp"

#include "common/json.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tagcsim::scenarios {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  return fmt::format("{:.1f} kB", b / 1e3);
}

struct Network {
  double nic_bytes = 0, nic_util = 0;        // per node, and its share of the NICs' capacity over the step
  double leaf_up_bytes = 0, leaf_up_util = 0;  // per leaf uplink
};

Network network_of(const Point& p, const sim::StepResult& st) {
  const auto& c = p.setup.cluster;
  const auto& r = st.replay;
  Network n;
  n.nic_bytes = r.nic_bytes_per_node;
  n.leaf_up_bytes = r.uplink_bytes_per_leaf;
  const double t = st.step_time_s;
  if (t > 0 && c.node_injection_bandwidth() > 0) {
    n.nic_util = n.nic_bytes / (c.node_injection_bandwidth() * t);
    const double up_bw = c.nodes_in_leaf() * c.node_injection_bandwidth() / c.fabric.oversubscription;
    n.leaf_up_util = n.leaf_up_bytes / (up_bw * t);
  }
  return n;
}

// The fsdp result at the same point, if the scenario asked for one.
const Result* baseline(const std::vector<Result>& all, const Result& r) {
  for (const auto& o : all)
    if (o.point == r.point && o.step.policy == "fsdp") return &o;
  return nullptr;
}

double speedup(const std::vector<Result>& all, const Result& r) {
  const Result* b = baseline(all, r);
  return b && r.step.step_time_s > 0 ? b->step.step_time_s / r.step.step_time_s : 0;
}

std::string table_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& width) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i)
    line += i == 0 ? fmt::format("{:<{}}", cells[i], width[i]) : fmt::format("  {:>{}}", cells[i], width[i]);
  return line + "\n";
}

std::string heading(const Scenario& s, const Point& p) {
  const auto& st = p.setup;
  const auto& c = st.cluster;
  std::string out = fmt::format("{}: {} ({:.2f}B params, {} FSDP units) on {} x {} = {} x {}\n", s.name,
                                st.model.name, double(models::parameter_count(st.model)) / 1e9, st.units.size(),
                                c.nodes, c.name, c.gpus(), c.gpu.name);
  const int seq = st.training.seq_len > 0 ? st.training.seq_len : st.model.seq_len;
  out += fmt::format("  {}, shard group {} GPUs, micro-batch {} x {} tokens, {} micro-batch(es), params {} / "
                     "reduce {}\n",
                     sim::to_string(st.training.sharding), st.shard_size(), st.training.micro_batch, seq,
                     st.training.grad_accumulation, sim::to_string(st.training.param_dtype),
                     sim::to_string(st.training.reduce_dtype));
  out += fmt::format("  compute: {}\n", sim::compute_model_description(c.gpu));
  return out;
}

std::string format_table(const Scenario& s, const std::vector<Result>& results) {
  std::string out;
  if (!s.description.empty()) out += s.description + "\n";
  if (s.points.size() == 1) out += heading(s, s.points.front()) + "\n";
  std::vector<std::string> head;
  for (const auto& k : s.sweep_keys) head.push_back(k);
  for (const char* h : {"policy", "step time", "speedup", "tokens/s/GPU", "MFU", "Megatron MFU", "peak mem", "compute",
                        "exposed comm", "all-gather", "grad reduce", "optimizer", "grad error"})
    head.push_back(h);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) {
    std::vector<std::string> row;
    for (const auto& kv : r.point->coordinates) row.push_back(kv.second);
    const auto& st = r.step;
    const double sp = speedup(results, r);
    row.push_back(st.policy);
    row.push_back(seconds(st.step_time_s));
    row.push_back(sp > 0 ? fmt::format("{:.3f}x", sp) : "-");
    row.push_back(fmt::format("{:.0f}", st.tokens_per_s_per_gpu));
    row.push_back(fmt::format("{:.1f}%", st.mfu * 100));
    row.push_back(fmt::format("{:.1f}%", st.mfu_megatron * 100));
    row.push_back(fmt::format("{:.1f} GiB{}", st.memory.peak_bytes() / kGiB, st.memory.fits() ? "" : " !"));
    row.push_back(seconds(st.breakdown.compute_s));
    row.push_back(seconds(st.breakdown.exposed_comm_s));
    row.push_back(seconds(st.breakdown.allgather_s));
    row.push_back(seconds(st.breakdown.reduce_scatter_s));
    row.push_back(seconds(st.breakdown.optimizer_s));
    row.push_back(st.expected_grad_error > 0 ? fmt::format("{:.2g}", st.expected_grad_error) : "0");
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(head.size());
  for (std::size_t i = 0; i < head.size(); ++i) {
    width[i] = head[i].size();
    for (const auto& r : rows) width[i] = std::max(width[i], r[i].size());
  }
  out += table_row(head, width);
  for (const auto& r : rows) out += table_row(r, width);

  const Result* worst = nullptr;  // the result that needs the most memory above capacity
  for (const auto& r : results)
    if (!r.step.memory.fits() && (!worst || r.step.memory.peak_bytes() > worst->step.memory.peak_bytes())) worst = &r;
  if (s.points.size() == 1 && !results.empty()) {
    const auto& m = results.front().step.memory;
    out += fmt::format("\nmemory per GPU: {:.1f} of {:.1f} GiB = sharded state {:.1f} + gathered params {:.1f} + "
                       "gradients {:.1f} + activations {:.1f} + workspace {:.1f}\n",
                       m.peak_bytes() / kGiB, m.capacity_bytes / kGiB, m.sharded_state_bytes / kGiB,
                       m.gathered_params_bytes / kGiB, m.gradient_bytes / kGiB, m.activation_bytes / kGiB,
                       m.workspace_bytes / kGiB);
    for (const auto& r : results) {
      out += fmt::format("collectives per step, {}:", r.step.policy);
      for (const auto& [name, c] : r.step.collectives)
        out += fmt::format("  {} {} x, {} (node egress {})", name, c.count, bytes(c.bytes),
                           bytes(c.node_egress_bytes));
      out += "\n";
    }
    for (const auto& r : results) {
      const auto n = network_of(*r.point, r.step);
      if (n.nic_bytes <= 0) continue;
      out += fmt::format("network per step, {}: {} out of each node's NICs ({:.0f}% of their capacity)",
                         r.step.policy, bytes(n.nic_bytes), 100 * n.nic_util);
      if (n.leaf_up_bytes > 0)
        out += fmt::format(", {} up each leaf uplink ({:.0f}%)", bytes(n.leaf_up_bytes), 100 * n.leaf_up_util);
      out += "\n";
    }
  }
  if (worst)
    out += fmt::format("\n! does not fit in GPU memory: needs up to {:.1f} GiB per GPU, the GPU has {:.1f} GiB "
                       "(rows marked !; try activation checkpointing, a smaller micro-batch or more GPUs)\n",
                       worst->step.memory.peak_bytes() / kGiB, worst->step.memory.capacity_bytes / kGiB);
  std::vector<std::string> notes;
  for (const auto& r : results) {
    if (!r.step.grad_error_basis.empty() &&
        std::find(notes.begin(), notes.end(), r.step.grad_error_basis) == notes.end())
      notes.push_back(r.step.grad_error_basis);
  }
  for (const auto& p : s.points)
    for (const auto& w : p.warnings)
      if (std::find(notes.begin(), notes.end(), "warning: " + w) == notes.end()) notes.push_back("warning: " + w);
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}


std::string num(double v) { return json_number(v); }

std::string format_json(const Scenario& s, const std::vector<Result>& results) {
  std::string models;  // the compute model of each point's GPU, once each
  for (const auto& p : s.points) {
    const auto d = json_string(sim::compute_model_description(p.setup.cluster.gpu));
    if (models.find(d) == std::string::npos) models += (models.empty() ? "" : ", ") + d;
  }
  std::string out = fmt::format("{{\n  \"scenario\": {},\n  \"file\": {},\n  \"compute_models\": [{}],\n  \"results\": [",
                                json_string(s.name), json_string(s.file), models);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const auto& st = r.step;
    const auto& b = st.breakdown;
    const auto& m = st.memory;
    std::string point;
    for (const auto& [k, v] : r.point->coordinates)
      point += fmt::format("{}{}: {}", point.empty() ? "" : ", ", json_string(k), json_string(v));
    std::string colls;
    for (const auto& [name, c] : st.collectives)
      colls += fmt::format("{}\n        {}: {{\"count\": {}, \"bytes\": {}, \"node_egress_bytes\": {}}}",
                           colls.empty() ? "" : ",", json_string(name), c.count, num(c.bytes),
                           num(c.node_egress_bytes));
    const double sp = speedup(results, r);
    const auto net = network_of(*r.point, st);
    out += fmt::format(
        "{}\n    {{\n      \"point\": {{{}}},\n      \"policy\": {},\n      \"gpus\": {},\n"
        "      \"step_time_s\": {},\n      \"speedup_vs_fsdp\": {},\n      \"tokens_per_s_per_gpu\": {},\n"
        "      \"mfu\": {},\n      \"mfu_megatron\": {},\n      \"peak_memory_gib\": {},\n      \"fits_in_memory\": {},\n"
        "      \"memory_gib\": {{\"capacity\": {}, \"sharded_state\": {}, \"gathered_params\": {}, \"gradients\": {}, "
        "\"activations\": {}, \"workspace\": {}}},\n"
        "      \"breakdown\": {{\"compute_s\": {}, \"exposed_comm_s\": {}, \"allgather_s\": {}, "
        "\"reduce_scatter_s\": {}, \"optimizer_s\": {}, \"compression_kernels_s\": {}}},\n"
        "      \"collectives\": {{{}\n      }},\n"
        "      \"network\": {{\"nic_bytes_per_node\": {}, \"nic_utilization\": {}, \"leaf_uplink_bytes\": {}, "
        "\"leaf_uplink_utilization\": {}}},\n"
        "      \"expected_grad_error\": {},\n      \"grad_error_basis\": {}\n"
        "    }}",
        i ? "," : "", point, json_string(st.policy), st.gpus, num(st.step_time_s), sp > 0 ? num(sp) : "null",
        num(st.tokens_per_s_per_gpu), num(st.mfu), num(st.mfu_megatron), num(m.peak_bytes() / kGiB), m.fits() ? "true" : "false",
        num(m.capacity_bytes / kGiB), num(m.sharded_state_bytes / kGiB), num(m.gathered_params_bytes / kGiB),
        num(m.gradient_bytes / kGiB), num(m.activation_bytes / kGiB), num(m.workspace_bytes / kGiB),
        num(b.compute_s), num(b.exposed_comm_s), num(b.allgather_s), num(b.reduce_scatter_s), num(b.optimizer_s),
        num(b.compression_kernels_s), colls, num(net.nic_bytes), num(net.nic_util), num(net.leaf_up_bytes),
        num(net.leaf_up_util), num(st.expected_grad_error), json_string(st.grad_error_basis));
  }
  std::string warnings;
  for (const auto& p : s.points)
    for (const auto& w : p.warnings) warnings += fmt::format("{}{}", warnings.empty() ? "" : ", ", json_string(w));
  out += fmt::format("\n  ],\n  \"warnings\": [{}]\n}}\n", warnings);
  return out;
}

std::string format_csv(const Scenario& s, const std::vector<Result>& results) {
  std::string out;
  for (const auto& k : s.sweep_keys) out += k + ",";
  out += "policy,gpus,step_time_s,speedup_vs_fsdp,tokens_per_s_per_gpu,mfu,mfu_megatron,peak_memory_gib,fits_in_memory,"
         "compute_s,exposed_comm_s,allgather_s,reduce_scatter_s,optimizer_s,compression_kernels_s,"
         "expected_grad_error\n";
  for (const auto& r : results) {
    for (const auto& kv : r.point->coordinates) out += kv.second + ",";
    const auto& st = r.step;
    const auto& b = st.breakdown;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", st.policy, st.gpus, num(st.step_time_s),
                       num(speedup(results, r)), num(st.tokens_per_s_per_gpu), num(st.mfu), num(st.mfu_megatron),
                       num(st.memory.peak_bytes() / kGiB), st.memory.fits() ? 1 : 0, num(b.compute_s),
                       num(b.exposed_comm_s), num(b.allgather_s), num(b.reduce_scatter_s), num(b.optimizer_s),
                       num(b.compression_kernels_s), num(st.expected_grad_error));
  }
  return out;
}

}  // namespace

Format parse_format(const std::string& text) {
  if (text == "table") return Format::Table;
  if (text == "json") return Format::Json;
  if (text == "csv") return Format::Csv;
  throw InputError(fmt::format("--format: expected table, json or csv; got '{}'", text));
}

std::string format_results(const Scenario& s, const std::vector<Result>& results, Format f) {
  switch (f) {
    case Format::Table: return format_table(s, results);
    case Format::Json: return format_json(s, results);
    case Format::Csv: return format_csv(s, results);
  }
  return "";
}

}  // namespace tagcsim::scenarios
