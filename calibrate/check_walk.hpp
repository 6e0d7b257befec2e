// How one rank's host thread walks a step's schedule: `calibrate check`'s executor runs it on the
// GPUs (calibrate/check/executor.cpp), and emulate_step() runs it on the CPU against given task
// durations, so that the walk is tested where there is no GPU.
//
// Tasks in issue order. A host task (sim::Stream::Host) first waits for the GPU tasks in its
// `after` (FSDP's event.synchronize(): the rate limiter), then spends its host time. A GPU task is
// issued once the host has waited for the GPU tasks in its `issued_after` and spent `issue_delay`
// of host time since the start of its host segment (the host's last task, or its last wait); it is
// then enqueued on its stream behind the tasks it waits for. These are sim/replay.cpp's rules, so
// emulate_step() with the replay's durations gives back the replay's times.
#pragma once

#include "sim/replay.hpp"
#include "sim/schedule.hpp"

#include <vector>

namespace tagcsim::calibrate {

// What the walk needs from the machine it runs on. Times are seconds since the step's start.
class HostSide {
 public:
  virtual ~HostSide() = default;
  virtual double now() = 0;
  // Blocks until GPU task `task` (issued earlier) has finished; returns now().
  virtual double wait(int task) = 0;
  // The host's modelled work (hooks, kernel issue): busy until `t`.
  virtual void spend_until(double t) = 0;
  // Enqueues GPU task `task` on its stream, after the GPU tasks it waits for on other streams.
  virtual void issue(int task) = 0;
};

// Walks `s` once. `emulate_host`: spend each host task's and issue delay's modelled time (else
// the host runs as fast as it issues). Returns the host tasks' times (GPU tasks' are left zero).
std::vector<sim::TaskTiming> walk_host(const sim::Schedule& s, HostSide& host, bool emulate_host = true);

// The walk on ideal streams: GPU task i takes seconds[i] once its stream is free, the tasks it
// waits for are done and the host has issued it. Every task's times.
std::vector<sim::TaskTiming> emulate_step(const sim::Schedule& s, const std::vector<double>& seconds);

}  // namespace tagcsim::calibrate
