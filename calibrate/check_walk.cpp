#include "calibrate/check_walk.hpp"

#include <algorithm>
#include <array>

namespace tagcsim::calibrate {
namespace {

bool on_gpu(const sim::Task& t) { return t.stream != sim::Stream::Host; }

// Ideal streams on a virtual clock.
class Emulated : public HostSide {
 public:
  Emulated(const sim::Schedule& s, const std::vector<double>& seconds)
      : s_(s), seconds_(seconds), timings_(s.tasks.size()) {
    free_.fill(0);
  }
  double now() override { return clock_; }
  double wait(int task) override { return clock_ = std::max(clock_, timings_[std::size_t(task)].end); }
  void spend_until(double t) override { clock_ = std::max(clock_, t); }
  void issue(int task) override {
    const auto& t = s_.tasks[std::size_t(task)];
    double start = std::max(clock_, free_[std::size_t(t.stream)]);
    for (int d : t.after)  // host tasks it waits for are behind the host already
      if (d >= 0 && on_gpu(s_.tasks[std::size_t(d)])) start = std::max(start, timings_[std::size_t(d)].end);
    timings_[std::size_t(task)] = {start, start + seconds_[std::size_t(task)]};
    free_[std::size_t(t.stream)] = timings_[std::size_t(task)].end;
  }
  const std::vector<sim::TaskTiming>& timings() const { return timings_; }

 private:
  const sim::Schedule& s_;
  const std::vector<double>& seconds_;
  std::vector<sim::TaskTiming> timings_;
  std::array<double, sim::kStreams> free_{};
  double clock_ = 0;
};

}  // namespace

std::vector<sim::TaskTiming> walk_host(const sim::Schedule& s, HostSide& host, bool emulate_host) {
  const auto& tasks = s.tasks;
  std::vector<sim::TaskTiming> out(tasks.size());
  std::vector<char> waited(tasks.size(), 0);
  double segment = 0;  // where the host's current segment started
  auto wait = [&](int d) {
    if (d < 0 || !on_gpu(tasks[std::size_t(d)]) || waited[std::size_t(d)]) return;
    segment = std::max(segment, host.wait(d));
    waited[std::size_t(d)] = 1;
  };
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    if (!on_gpu(t)) {
      for (int d : t.after) wait(d);
      if (emulate_host) host.spend_until(segment + t.seconds);
      out[i] = {segment, host.now()};
      segment = out[i].end;
      continue;
    }
    for (int d : t.issued_after) wait(d);
    if (emulate_host) host.spend_until(segment + t.issue_delay);
    host.issue(int(i));
  }
  return out;
}

std::vector<sim::TaskTiming> emulate_step(const sim::Schedule& s, const std::vector<double>& seconds) {
  Emulated e(s, seconds);
  auto out = walk_host(s, e, true);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (on_gpu(s.tasks[i])) out[i] = e.timings()[i];
  return out;
}

}  // namespace tagcsim::calibrate
