#include "scenarios/report.hpp"
#include "scenarios/report_heading.hpp"
#include "scenarios/report_notes.hpp"

#include "common/json.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tagcsim::scenarios {
namespace {

using detail::collective_model_description;
using detail::coordinates_text;
using detail::heading;
using detail::notes_of;

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

// The first plain fsdp result at the same point, if the scenario asked for one.
const Result* baseline(const std::vector<Result>& all, const Result& r) {
  for (const auto& o : all)
    if (o.point == r.point && o.policy && o.policy->kind == sim::PolicyKind::Fsdp) return &o;
  return nullptr;
}

// The decoded gradient is mostly noise: whatever such a row saves, it is not a usable win.
bool gradient_is_noise(const Result& r) { return r.step.expected_grad_error >= 1; }

// Compute without the compression kernels, which run on the compute stream too.
double model_compute_s(const sim::Breakdown& b) { return std::max(0.0, b.compute_s - b.compression_kernels_s); }

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

// The budget's columns, each shown when some point of the scenario gives what it needs.
struct BudgetColumns {
  bool time = false, price = false, cost = false;
};
BudgetColumns budget_columns(const Scenario& s) {
  BudgetColumns c;
  for (const auto& p : s.points) {
    c.time |= p.budget.tokens > 0;
    c.price |= p.budget.gpu_hour_price > 0;
    c.cost |= p.budget.tokens > 0 && p.budget.gpu_hour_price > 0;
  }
  return c;
}

// How the budget's columns are computed, with the run's size and price when every point shares them.
std::string budget_line(const Scenario& s) {
  const auto c = budget_columns(s);
  if (!c.time && !c.price) return "";
  const Budget& b = s.points.front().budget;
  auto shared = [&](auto same) { return std::all_of(s.points.begin(), s.points.end(), same); };
  std::vector<std::string> given, parts;
  if (b.tokens > 0 && shared([&](const Point& p) { return p.budget.tokens == b.tokens; }))
    given.push_back(fmt::format("a run of {} tokens", tokens_text(b.tokens)));
  if (b.gpu_hour_price > 0 && shared([&](const Point& p) {
        return p.budget.gpu_hour_price == b.gpu_hour_price && p.budget.currency == b.currency;
      }))
    given.push_back(fmt::format("{} a GPU-hour", money_text(b.gpu_hour_price, b.currency)));
  if (c.time) parts.push_back("time to train = the run's tokens / (tokens/s/GPU x GPUs)");
  if (c.price) parts.push_back("cost/M tokens = GPU-hour price x GPUs / (tokens/s of all GPUs x 3600) x 10^6");
  if (c.cost) parts.push_back("run cost = time to train x GPUs x GPU-hour price");
  std::string out = "\nbudget: ";
  for (std::size_t i = 0; i < given.size(); ++i) out += (i ? " at " : "") + given[i];
  if (!given.empty()) out += "; ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out + " (rows marked ! do not fit in memory or train on noise)";
}

std::string format_table(const Scenario& s, const std::vector<Result>& results) {
  std::string out;
  if (!s.description.empty()) out += s.description + "\n";
  if (!s.points.empty()) out += heading(s, s.points.front()) + "\n";
  std::vector<std::string> head;
  for (const auto& k : s.sweep_keys) head.push_back(k);
  for (const auto& h : table_columns()) head.push_back(h);
  const auto budget = budget_columns(s);
  if (budget.time) head.push_back("time to train");
  if (budget.price) head.push_back("cost/M tokens");
  if (budget.cost) head.push_back("run cost");
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) {
    std::vector<std::string> row;
    for (const auto& kv : r.point->coordinates) row.push_back(kv.second);
    const auto& st = r.step;
    const double sp = speedup(results, r);
    const bool noise = gradient_is_noise(r);
    row.push_back(st.policy);
    row.push_back(seconds(st.step_time_s));
    row.push_back(sp <= 0 ? "-" : noise ? fmt::format("({:.3f}x) !", sp) : fmt::format("{:.3f}x", sp));
    row.push_back(fmt::format("{:.0f}", st.tokens_per_s_per_gpu));
    row.push_back(fmt::format("{:.1f}%", st.mfu * 100));
    row.push_back(fmt::format("{:.1f}%", st.mfu_megatron * 100));
    row.push_back(fmt::format("{:.1f} GiB{}", st.memory.peak_bytes() / kGiB, st.memory.fits() ? "" : " !"));
    row.push_back(seconds(model_compute_s(st.breakdown)));
    row.push_back(st.breakdown.compression_kernels_s > 0 ? seconds(st.breakdown.compression_kernels_s) : "-");
    row.push_back(seconds(st.breakdown.exposed_comm_s));
    row.push_back(seconds(st.breakdown.allgather_s));
    row.push_back(seconds(st.breakdown.reduce_scatter_s));
    row.push_back(seconds(st.breakdown.optimizer_s));
    row.push_back(st.expected_grad_error > 0 ? fmt::format("{:.2g}{}", st.expected_grad_error, noise ? " !" : "")
                                             : "0");
    const auto run = run_cost(r.point->budget, st.tokens_per_s_per_gpu, st.gpus);
    const std::string mark = st.memory.fits() && !noise ? "" : " !";
    auto cell = [&](const std::optional<double>& v, auto text) { return v ? text(*v) + mark : std::string("-"); };
    const auto money = [&](double v) { return money_text(v, r.point->budget.currency); };
    if (budget.time) row.push_back(cell(run.time_s, duration_text));
    if (budget.price) row.push_back(cell(run.cost_per_million_tokens, money));
    if (budget.cost) row.push_back(cell(run.cost, money));
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
    out += fmt::format("\nmemory per GPU at the peak: {:.1f} of {:.1f} GiB = allocated {:.1f} (sharded state {:.1f} + "
                       "gathered params {:.1f} + gradients {:.1f} + activations {:.1f}) + allocator reserve {:.1f} "
                       "(reserved {:.1f}) + CUDA/NCCL workspace {:.1f}\n",
                       m.peak_bytes() / kGiB, m.capacity_bytes / kGiB, m.allocated_bytes() / kGiB,
                       m.sharded_state_bytes / kGiB, m.gathered_params_bytes / kGiB, m.gradient_bytes / kGiB,
                       m.activation_bytes / kGiB, m.fragmentation_bytes / kGiB, m.reserved_bytes() / kGiB,
                       m.workspace_bytes / kGiB);
    for (const auto& r : results) {
      out += fmt::format("collectives per step, {}:", r.step.policy);
      for (const auto& [name, c] : r.step.collectives)
        out += fmt::format("  {} {} x, {} (node egress {})", name, c.count, bytes(c.bytes),
                           bytes(c.node_egress_bytes));
      out += "\n";
    }
    // Time inside the compute stream's busy time, named with its share of it.
    auto compute_share = [&](double sim::Breakdown::*part, const char* lead, const char* before, const char* after,
                             const char* where) {
      for (const auto& r : results)
        if (const auto& b = r.step.breakdown; b.*part > 0)
          out += fmt::format("{}, {}: {}{} {} ({:.1f}% of its busy time; {})\n", lead, r.step.policy, before,
                             seconds(b.*part), after, 100 * b.*part / std::max(1e-12, b.compute_s + b.optimizer_s),
                             where);
    };
    compute_share(&sim::Breakdown::expert_all_to_all_s, "expert parallel all-to-alls", "",
                  "of the compute stream's time waiting for them", "sim/model_parallel.hpp");
    compute_share(&sim::Breakdown::sm_slowdown_s, "SMs held by NCCL", "the compute stream's kernels ",
                  "slower while collectives ran beside them", "docs/compute-model.md");
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
  const Result* noisiest = nullptr;
  for (const auto& r : results)
    if (gradient_is_noise(r) && (!noisiest || r.step.expected_grad_error > noisiest->step.expected_grad_error))
      noisiest = &r;
  if (noisiest)
    out += fmt::format("{}! gradient is noise: expected gradient error up to {:.2g} (>= 1: the decoded gradient is "
                       "mostly error, training would not converge); the speedups of rows marked ! are in "
                       "parentheses, not usable (try a lower ratio or sparsity, or `tagcsim tune "
                       "--max-grad-error 0.1`)\n",
                       worst ? "" : "\n", noisiest->step.expected_grad_error);
  if (const auto line = budget_line(s); !line.empty()) out += line + "\n";
  for (const auto& n : notes_of(s, results)) out += "note: " + n + "\n";
  return out;
}


std::string num(double v) { return json_number(v); }
std::string optional_num(bool given, double v) { return given ? num(v) : "null"; }
std::string optional_num(const std::optional<double>& v) { return v ? num(*v) : "null"; }

// A CSV cell: quoted when it holds a comma or a quote (a label such as tagc[index=4bit-sum,ratio=4]).
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string format_json(const Scenario& s, const std::vector<Result>& results) {
  std::string models;  // the compute model of each point's GPU, once each
  for (const auto& p : s.points) {
    const auto d = json_string(sim::compute_model_description(p.setup.cluster.gpu));
    if (models.find(d) == std::string::npos) models += (models.empty() ? "" : ", ") + d;
  }
  std::string collective_models;  // likewise the collective model's held-out errors for each point's cluster
  for (const auto& p : s.points)
    if (const auto d = collective_model_description(p.setup.cluster); !d.empty())
      if (const auto j = json_string(d); collective_models.find(j) == std::string::npos)
        collective_models += (collective_models.empty() ? "" : ", ") + j;
  std::string out = fmt::format(
      "{{\n  \"scenario\": {},\n  \"file\": {},\n  \"compute_models\": [{}],\n  \"collective_models\": [{}],\n"
      "  \"results\": [",
      json_string(s.name), json_string(s.file), models, collective_models);
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
    const Budget& budget = r.point->budget;
    const auto run = run_cost(budget, st.tokens_per_s_per_gpu, st.gpus);
    out += fmt::format(
        "{}\n    {{\n      \"point\": {{{}}},\n      \"policy\": {},\n      \"policy_kind\": {},\n"
        "      \"gpus\": {},\n      \"slowest_gpu_speed\": {},\n"
        "      \"step_time_s\": {},\n      \"speedup_vs_fsdp\": {},\n      \"tokens_per_s_per_gpu\": {},\n"
        "      \"mfu\": {},\n      \"mfu_megatron\": {},\n      \"peak_memory_gib\": {},\n      \"fits_in_memory\": {},\n"
        "      \"memory_gib\": {{\"capacity\": {}, \"allocated\": {}, \"reserved\": {}, \"sharded_state\": {}, "
        "\"gathered_params\": {}, \"gradients\": {}, \"activations\": {}, \"allocator_reserve\": {}, "
        "\"workspace\": {}}},\n"
        "      \"breakdown\": {{\"compute_s\": {}, \"model_compute_s\": {}, \"compression_kernels_s\": {}, "
        "\"exposed_comm_s\": {}, \"allgather_s\": {}, \"reduce_scatter_s\": {}, \"optimizer_s\": {}, "
        "\"fsdp_copy_s\": {}, \"host_s\": {}, \"sm_slowdown_s\": {}, \"pipeline_bubble_s\": {}, "
        "\"expert_all_to_all_s\": {}}},\n"
        "      \"collectives\": {{{}\n      }},\n"
        "      \"network\": {{\"nic_bytes_per_node\": {}, \"nic_utilization\": {}, \"leaf_uplink_bytes\": {}, "
        "\"leaf_uplink_utilization\": {}}},\n"
        "      \"expected_grad_error\": {},\n      \"gradient_is_noise\": {},\n"
        "      \"grad_error_basis\": {},\n"
        "      \"training_run\": {{\"tokens\": {}, \"gpu_hour_price\": {}, \"currency\": {}, \"time_s\": {}, "
        "\"gpu_hours\": {}, \"cost_per_million_tokens\": {}, \"cost\": {}}}\n"
        "    }}",
        i ? "," : "", point, json_string(st.policy),
        json_string(r.policy ? sim::to_string(r.policy->kind) : st.policy), st.gpus,
        num(r.point->setup.cluster.slowest_gpu_speed()), num(st.step_time_s), sp > 0 ? num(sp) : "null",
        num(st.tokens_per_s_per_gpu), num(st.mfu), num(st.mfu_megatron), num(m.peak_bytes() / kGiB), m.fits() ? "true" : "false",
        num(m.capacity_bytes / kGiB), num(m.allocated_bytes() / kGiB), num(m.reserved_bytes() / kGiB),
        num(m.sharded_state_bytes / kGiB), num(m.gathered_params_bytes / kGiB), num(m.gradient_bytes / kGiB),
        num(m.activation_bytes / kGiB), num(m.fragmentation_bytes / kGiB), num(m.workspace_bytes / kGiB),
        num(b.compute_s), num(model_compute_s(b)), num(b.compression_kernels_s), num(b.exposed_comm_s),
        num(b.allgather_s), num(b.reduce_scatter_s), num(b.optimizer_s), num(b.fsdp_copy_s), num(b.host_s),
        num(b.sm_slowdown_s), num(b.pipeline_bubble_s), num(b.expert_all_to_all_s), colls,
        num(net.nic_bytes), num(net.nic_util), num(net.leaf_up_bytes), num(net.leaf_up_util),
        num(st.expected_grad_error), gradient_is_noise(r) ? "true" : "false", json_string(st.grad_error_basis),
        optional_num(budget.tokens > 0, budget.tokens), optional_num(budget.gpu_hour_price > 0, budget.gpu_hour_price),
        budget.currency.empty() ? "null" : json_string(budget.currency), optional_num(run.time_s),
        optional_num(run.gpu_hours), optional_num(run.cost_per_million_tokens), optional_num(run.cost));
  }
  std::string notes;
  for (const auto& n : notes_of(s, results)) notes += fmt::format("{}\n    {}", notes.empty() ? "" : ",", json_string(n));
  out += fmt::format("\n  ],\n  \"notes\": [{}\n  ]\n}}\n", notes);
  return out;
}

std::string format_csv(const Scenario& s, const std::vector<Result>& results) {
  std::string out;
  for (const auto& k : s.sweep_keys) out += csv_field(k) + ",";
  out += "policy,policy_kind,gpus,step_time_s,speedup_vs_fsdp,tokens_per_s_per_gpu,mfu,mfu_megatron,peak_memory_gib,"
         "fits_in_memory,compute_s,model_compute_s,compression_kernels_s,exposed_comm_s,allgather_s,"
         "reduce_scatter_s,optimizer_s,expected_grad_error,gradient_is_noise,train_time_s,gpu_hours,"
         "cost_per_million_tokens,run_cost\n";
  for (const auto& r : results) {
    for (const auto& kv : r.point->coordinates) out += csv_field(kv.second) + ",";
    const auto& st = r.step;
    const auto& b = st.breakdown;
    const auto run = run_cost(r.point->budget, st.tokens_per_s_per_gpu, st.gpus);
    auto cell = [](const std::optional<double>& v) { return v ? num(*v) : std::string(); };
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(st.policy),
                       r.policy ? sim::to_string(r.policy->kind) : "", st.gpus, num(st.step_time_s),
                       num(speedup(results, r)), num(st.tokens_per_s_per_gpu), num(st.mfu), num(st.mfu_megatron),
                       num(st.memory.peak_bytes() / kGiB), st.memory.fits() ? 1 : 0, num(b.compute_s),
                       num(model_compute_s(b)), num(b.compression_kernels_s), num(b.exposed_comm_s),
                       num(b.allgather_s), num(b.reduce_scatter_s), num(b.optimizer_s), num(st.expected_grad_error),
                       gradient_is_noise(r) ? 1 : 0, cell(run.time_s), cell(run.gpu_hours),
                       cell(run.cost_per_million_tokens), cell(run.cost));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& table_columns() {
  static const std::vector<std::string> columns = {"policy",      "step time",    "speedup",      "tokens/s/GPU",
                                                   "MFU",         "Megatron MFU", "peak mem",     "compute",
                                                   "compression", "exposed comm", "all-gather",   "grad reduce",
                                                   "optimizer",   "grad error"};
  return columns;
}

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
