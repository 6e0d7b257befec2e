#include "calibrate/check_compare.hpp"

#include "calibrate/box_plan.hpp"
#include "calibrate/unit_work.hpp"
#include "common/input.hpp"
#include "common/json.hpp"
#include "sim/compute.hpp"
#include "sim/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace tagcsim::calibrate {
namespace {

constexpr const char* kFormat = "tagcsim-check-trace/1";
constexpr int kCategories = 10;

std::string ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }

}  // namespace

double MeasuredRun::median_step() const {
  if (step_times.empty()) return 0;
  auto v = step_times;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string measured_run_json(const MeasuredRun& m, const sim::Schedule& s) {
  std::string out = fmt::format("{{\"format\": \"{}\", \"policy\": {}, \"gpus\": {}, \"box\": {},\n \"step_times\": [",
                                kFormat, json_string(m.policy), m.gpus, json_string(m.box));
  for (std::size_t i = 0; i < m.step_times.size(); ++i) out += (i ? ", " : "") + json_number(m.step_times[i]);
  out += "],\n \"notes\": [";
  for (std::size_t i = 0; i < m.notes.size(); ++i) out += (i ? ", " : "") + json_string(m.notes[i]);
  out += "],\n \"tasks\": [";
  for (std::size_t i = 0; i < m.timings.size() && i < s.tasks.size(); ++i)
    out += fmt::format("{}\n  {{\"name\": {}, \"stream\": {}, \"start_s\": {}, \"end_s\": {}}}", i ? "," : "",
                       json_string(s.tasks[i].name), int(s.tasks[i].stream), json_number(m.timings[i].start),
                       json_number(m.timings[i].end));
  return out + "\n]}\n";
}

MeasuredRun parse_measured_run(const std::string& text, const std::string& file, const sim::Schedule& s) {
  const Input doc = Input::load_string(text, file);  // JSON is YAML
  if (!doc.is_map()) doc.fail("expected a measured step (a JSON object)");
  doc.expect_keys({"format", "policy", "gpus", "box", "step_times", "notes", "tasks"});
  if (doc["format"].as_string() != kFormat)
    doc["format"].fail(fmt::format("expected '{}', got '{}'", kFormat, doc["format"].as_string()));
  MeasuredRun m;
  m.policy = doc["policy"].as_string();
  m.gpus = doc["gpus"].as_int_between(1, 1 << 16);
  m.box = doc["box"].as_string();
  const Input steps = doc["step_times"];
  if (steps.size() == 0) steps.fail("expected at least one measured step");
  for (std::size_t i = 0; i < steps.size(); ++i) m.step_times.push_back(steps.at(i).as_positive());
  const Input notes = doc["notes"];
  for (std::size_t i = 0; i < notes.size(); ++i) m.notes.push_back(notes.at(i).as_string());
  const Input tasks = doc["tasks"];
  if (tasks.size() != s.tasks.size())
    tasks.fail(fmt::format("{} tasks, but the scenario's schedule for policy '{}' has {}: the trace belongs to another "
                           "schedule",
                           tasks.size(), m.policy, s.tasks.size()));
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Input t = tasks.at(i);
    t.expect_keys({"name", "stream", "start_s", "end_s"});
    if (t["name"].as_string() != s.tasks[i].name || t["stream"].as_int() != int(s.tasks[i].stream))
      t.fail(fmt::format("task {} is '{}', the schedule's is '{}' on stream {}: the trace belongs to another schedule",
                         i, t["name"].as_string(), s.tasks[i].name, int(s.tasks[i].stream)));
    const double a = t["start_s"].as_non_negative(), b = t["end_s"].as_non_negative();
    if (b < a) t["end_s"].fail(fmt::format("ends ({:g} s) before it starts ({:g} s)", b, a));
    m.timings.push_back({a, b});
  }
  return m;
}

MeasuredRun load_measured_run(const std::string& path, const sim::Schedule& s) {
  return parse_measured_run(read_text_file(path, "cannot open the measured step"), path, s);
}

CheckComparison compare(const sim::StepResult& predicted, const MeasuredRun& measured) {
  const auto& s = predicted.schedule;
  if (measured.timings.size() != s.tasks.size() || predicted.replay.timings.size() != s.tasks.size())
    throw InputError(fmt::format("policy '{}': the measured step has {} task times, the schedule {} tasks",
                                 measured.policy, measured.timings.size(), s.tasks.size()));
  CheckComparison c;
  c.policy = predicted.policy;
  c.predicted_step = predicted.step_time_s;
  c.measured_step = measured.median_step();
  for (std::size_t i = 0; i < s.tasks.size(); ++i) {
    const auto& p = predicted.replay.timings[i];
    const auto& m = measured.timings[i];
    TaskComparison t{int(i), p.start, p.end - p.start, m.start, m.end - m.start};
    auto& st = c.streams[std::size_t(s.tasks[i].stream)];
    st.predicted_busy += t.predicted_s, st.measured_busy += t.measured_s, ++st.tasks;
    auto& cat = c.categories[std::size_t(s.tasks[i].category)];
    cat.predicted += t.predicted_s, cat.measured += t.measured_s, ++cat.tasks;
    c.tasks.push_back(t);
  }
  return c;
}

std::string comparison_report(const std::vector<CheckComparison>& cs, const std::vector<sim::StepResult>& predicted,
                              int top) {
  std::string out = "Step time, measured on this box against predicted (error = predicted / measured - 1):\n";
  out += fmt::format("  {:<16} {:>12} {:>12} {:>8}\n", "policy", "measured", "predicted", "error");
  for (const auto& c : cs)
    out += fmt::format("  {:<16} {:>12} {:>12} {:>+7.1f}%\n", c.policy, ms(c.measured_step), ms(c.predicted_step),
                       100 * c.error());
  for (std::size_t k = 0; k < cs.size(); ++k) {
    const auto& c = cs[k];
    const auto& s = predicted[k].schedule;
    out += fmt::format("\n== {}: busy time per stream (summed task time, rank 0)\n", c.policy);
    out += fmt::format("  {:<26} {:>6} {:>12} {:>12} {:>8}\n", "stream", "tasks", "measured", "predicted", "error");
    for (int i = 0; i < sim::kStreams; ++i) {
      const auto& st = c.streams[std::size_t(i)];
      if (st.tasks == 0) continue;
      out += fmt::format("  {:<26} {:>6} {:>12} {:>12} {:>8}\n", sim::to_string(sim::Stream(i)), st.tasks,
                         ms(st.measured_busy), ms(st.predicted_busy),
                         st.measured_busy > 0 ? fmt::format("{:+.1f}%", 100 * (st.predicted_busy / st.measured_busy - 1))
                                              : "-");
    }
    out += fmt::format("  {:<26} {:>6} {:>12} {:>12} {:>8}\n", "category", "tasks", "measured", "predicted", "error");
    for (int i = 0; i < kCategories; ++i) {
      const auto& ct = c.categories[std::size_t(i)];
      if (ct.tasks == 0) continue;
      out += fmt::format("  {:<26} {:>6} {:>12} {:>12} {:>8}\n", sim::to_string(sim::Category(i)), ct.tasks,
                         ms(ct.measured), ms(ct.predicted),
                         ct.measured > 0 ? fmt::format("{:+.1f}%", 100 * (ct.predicted / ct.measured - 1)) : "-");
    }
    // The tasks furthest from their prediction, by absolute difference in duration.
    std::vector<TaskComparison> t = c.tasks;
    std::stable_sort(t.begin(), t.end(), [](const auto& a, const auto& b) {
      return std::abs(a.measured_s - a.predicted_s) > std::abs(b.measured_s - b.predicted_s);
    });
    if (int(t.size()) > top) t.resize(std::size_t(top));
    out += fmt::format("  tasks furthest from their prediction (of {}):\n", c.tasks.size());
    out += fmt::format("  {:>5} {:<44} {:>11} {:>11} {:>8} {:>11} {:>11}\n", "task", "name", "measured", "predicted",
                       "error", "starts at", "predicted");
    for (const auto& x : t) {
      std::string name = s.tasks[std::size_t(x.task)].name;
      if (name.size() > 44) name = name.substr(0, 41) + "...";
      out += fmt::format("  {:>5} {:<44} {:>11} {:>11} {:>8} {:>11} {:>11}\n", x.task, name, ms(x.measured_s),
                         ms(x.predicted_s),
                         x.measured_s > 0 ? fmt::format("{:+.1f}%", 100 * (x.predicted_s / x.measured_s - 1)) : "-",
                         ms(x.measured_start), ms(x.predicted_start));
    }
  }
  return out;
}

std::string measured_trace(const sim::StepResult& predicted, const MeasuredRun& m, const std::string& title) {
  sim::StepResult r;
  r.policy = predicted.policy;
  r.schedule = predicted.schedule;
  r.replay.timings = m.timings;
  return sim::chrome_trace(r, title);
}

void check_runnable(const sim::StepSetup& setup) {
  for (const auto& u : setup.units) (void)kernels_of(u);
}

void check_fits_box(const sim::StepSetup& setup, int box_gpus, const std::string& scenario) {
  const auto& c = setup.cluster;
  if (c.nodes > 1 || c.gpus_per_node > box_gpus)
    throw InputError(fmt::format(
        "{}: the scenario needs {} node(s) x {} GPUs, this box has {} GPU(s) in one node; run it on the box with "
        "--cluster <cluster file from `tagcsim calibrate box`> (or a cluster of 1 node and at most {} GPUs)",
        scenario, c.nodes, c.gpus_per_node, box_gpus, box_gpus));
}

std::string check_plan_text(const sim::StepSetup& setup, const std::vector<sim::StepResult>& predicted,
                            const std::string& scenario, const std::string& out_dir, int box_gpus) {
  const auto& c = setup.cluster;
  std::string out = fmt::format("tagcsim calibrate check {}: plan\n", scenario);
  out += fmt::format("Cluster: {} ({} node(s) x {} GPUs of {}); model {}, {} units, micro-batch {} x seq {}, {} "
                     "micro-batch(es), {}\n",
                     c.name, c.nodes, c.gpus_per_node, c.gpu.name, setup.model.name, setup.units.size(),
                     setup.training.micro_batch,
                     setup.seq_len(),
                     setup.training.grad_accumulation, sim::to_string(setup.training.api));
  out += "Compute model of the prediction: " + sim::compute_model_description(c.gpu) + "\n";
  if (box_gpus <= 0)
    out += fmt::format("Box: no GPU visible here; a run needs one node with {} GPU(s){}\n", c.gpus_per_node,
                       c.nodes > 1 ? fmt::format(" (this scenario has {} nodes: pass --cluster <box cluster file> to "
                                                 "run it on one box)",
                                                 c.nodes)
                                   : "");
  else
    out += fmt::format("Box: {} GPU(s) visible\n", box_gpus);
  out += "Execution: one thread per GPU walks the schedule in issue order; each task runs on the CUDA stream of its "
         "sim::Stream, after CUDA events of the tasks it waits for; the host blocks where FSDP synchronizes "
         "(rate limiter) and spins for the modelled host time (hooks, kernel issue); collectives are NCCL calls on one "
         "communicator per stream; compute tasks run the unit's kernel list (models/kernel_list.hpp): its GEMMs "
         "(cuBLASLt), its attention (math-blocked) and each memory-bound kernel's bytes; FSDP's copies and the "
         "optimizer the bytes their modelled time implies; compression kernels run TAGC's CUDA kernels. 1 warm-up "
         "step, then 3 measured.\n";

  // The unit kernels, by distinct unit shape.
  out += "\nCompute per unit (GEMM m x n x k; attention batch x heads, seq, head_dim):\n";
  std::set<std::string> shown;
  for (const auto& u : setup.units) {
    if (!u.kernels) {
      out += fmt::format("  {}: no kernel list (the simulator times it from its FLOPs); the check cannot run it\n",
                         u.name);
      continue;
    }
    const auto w = unit_work(u);
    std::string key = models::to_string(u.kind);
    std::string line;
    for (const auto& g : w.forward.gemms) line += fmt::format(" {:g}x{:g}x{:g}", g.m, g.n, g.k);
    if (!shown.insert(key + line).second) continue;
    std::string attention;
    for (const auto& a : w.forward.attention)
      attention += fmt::format("; attention {:g} x {:g} x {:g}", a.batch_heads, a.seq, a.head_dim);
    out += fmt::format("  {} ({}): forward{}; backward {} GEMMs{}{}; memory-bound {} kernels {} fwd / {} kernels {} "
                       "bwd\n",
                       u.name, key, line.empty() ? " none" : line, w.backward.gemms.size(), attention,
                       w.recompute ? " (recompute)" : "", w.forward.memory_bytes.size(), bytes_text(w.forward.bytes()),
                       w.backward.memory_bytes.size(), bytes_text(w.backward.bytes()));
  }
  for (const auto& p : predicted) {
    const auto& s = p.schedule;
    std::array<int, sim::kStreams> per_stream{};
    std::map<std::string, std::pair<int, double>> colls;  // "all_gather 1.2 GiB over 32" -> count, bytes
    int kernels = 0;
    for (const auto& t : s.tasks) {
      ++per_stream[std::size_t(t.stream)];
      if (t.category == sim::Category::CompressionKernel) ++kernels;
      for (const auto& ph : t.phases) {
        auto& e = colls[fmt::format("{} {} over {} GPUs", ph.label.empty() ? sim::to_string(ph.plan.op) : ph.label,
                                    bytes_text(ph.plan.bytes), ph.plan.group.ranks())];
        e.first += ph.count;
      }
    }
    out += fmt::format("\nPolicy {}: {} tasks (", p.policy, s.tasks.size());
    bool first = true;
    for (int i = 0; i < sim::kStreams; ++i)
      if (per_stream[std::size_t(i)])
        out += fmt::format("{}{} {}", first ? "" : ", ", sim::to_string(sim::Stream(i)), per_stream[std::size_t(i)]),
            first = false;
    out += fmt::format("); predicted step {}\n", ms(p.step_time_s));
    if (kernels) out += fmt::format("  TAGC kernel tasks: {}\n", kernels);
    for (const auto& [what, e] : colls) out += fmt::format("  NCCL {} x {}\n", e.first, what);
  }
  out += fmt::format("\nFiles, under {}/:\n", out_dir);
  for (const auto& p : predicted) {
    out += fmt::format("  {:<36} the measured step (format tagcsim-check-trace/1)\n", "measured-" + p.policy + ".json");
    out += fmt::format("  {:<36} Chrome trace of the measured step\n", "trace-measured-" + p.policy + ".json");
    out += fmt::format("  {:<36} Chrome trace of the predicted step\n", "trace-predicted-" + p.policy + ".json");
  }
  out += fmt::format("  {:<36} measured against predicted: step, streams, categories, tasks\n", "check-report.txt");
  return out;
}

}  // namespace tagcsim::calibrate
