#include "sim/trace.hpp"

#include "common/json.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tagcsim::sim {

std::string chrome_trace(const std::vector<TraceProcess>& processes) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  std::string sep = "\n";
  for (std::size_t pid = 0; pid < processes.size(); ++pid) {
    const StepResult& step = *processes[pid].step;
    out += fmt::format("{}{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":{}}}}}", sep, pid,
                       json_string(processes[pid].name));
    sep = ",\n";
    // Perfetto orders processes by this index: the file's order, the report's order.
    out += fmt::format(",\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}",
                       pid, pid);
    // One track per stream, the host's first: it issues what the others run.
    for (int s = 0; s < kStreams; ++s) {
      out += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}",
                         pid, s, to_string(Stream(s)));
      out += fmt::format(",\n{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{"
                         "\"sort_index\":{}}}}}",
                         pid, s, Stream(s) == Stream::Host ? -1 : s);
    }
    const auto& tasks = step.schedule.tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      const auto& tm = step.replay.timings[i];
      std::string args = fmt::format("\"category\":\"{}\"", to_string(t.category));
      for (std::size_t k = 0; k < t.phases.size(); ++k) {
        const Phase& ph = t.phases[k];
        args += fmt::format(",\"phase{}\":\"{} x {} {} of {:.0f} bytes, node egress {:.0f}\"", k, ph.count,
                            ph.label.empty() ? to_string(ph.plan.op) : ph.label, to_string(ph.plan.algorithm),
                            ph.plan.bytes, ph.plan.node_egress_bytes);
      }
      out += fmt::format(",\n{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},"
                         "\"dur\":{:.3f},\"args\":{{{}}}}}",
                         json_string(t.name), to_string(t.category), pid, int(t.stream), tm.start * 1e6,
                         (tm.end - tm.start) * 1e6, args);
    }
    // Under pipeline parallelism the tracks above are the slowest rank's FSDP step, its micro-batches
    // back to back; the schedule itself gets one track per pipeline rank.
    const int ranks = step.pipeline_ops.empty() ? 0 : 1 + std::max_element(step.pipeline_ops.begin(),
                                                                          step.pipeline_ops.end(),
                                                                          [](const auto& a, const auto& b) {
                                                                            return a.rank < b.rank;
                                                                          })->rank;
    for (int r = 0; r < ranks; ++r)
      out += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":"
                         "\"pipeline rank {} (schedule)\"}}}}",
                         pid, kStreams + r, r);
    for (const auto& op : step.pipeline_ops)
      out += fmt::format(",\n{{\"name\":\"{}{}.{}\",\"cat\":\"pipeline\",\"ph\":\"X\",\"pid\":{},\"tid\":{},"
                         "\"ts\":{:.3f},\"dur\":{:.3f},\"args\":{{\"stage\":{},\"microbatch\":{}}}}}",
                         op.backward ? "B" : "F", op.stage, op.microbatch, pid, kStreams + op.rank, op.start * 1e6,
                         (op.end - op.start) * 1e6, op.stage, op.microbatch);
  }
  out += "\n]}\n";
  return out;
}

std::string chrome_trace(const StepResult& step, const std::string& title) {
  return chrome_trace(std::vector<TraceProcess>{{title, &step}});
}

}  // namespace tagcsim::sim
