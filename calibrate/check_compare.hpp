// `tagcsim calibrate check`, host side: the plan of a real step, the measured run's file, and
// the comparison of the measured step with the simulator's, task by task.
//
// The executor (calibrate/check/, CUDA) runs the very sim::Schedule the simulator replays and
// records, for rank 0, when each task started and ended (GPU tasks by CUDA events, host tasks by
// the host clock, both from the step's start). Everything here works on that record, so it runs
// and is tested without a GPU.
#pragma once

#include "sim/policy.hpp"
#include "sim/step.hpp"

#include <array>
#include <string>
#include <vector>

namespace tagcsim::calibrate {

struct MeasuredRun {
  std::string policy;
  int gpus = 0;
  std::string box;                          // "1 x NVIDIA H200, driver ..., NCCL ..."
  std::vector<double> step_times;           // every measured step (the slowest GPU of each)
  std::vector<sim::TaskTiming> timings;     // the median step, rank 0, one per schedule task
  std::vector<std::string> notes;           // how tasks were run (host emulation, attention kernel, ...)
  double median_step() const;
};

// format tagcsim-check-trace/1 (JSON): the record, with each task's name and stream so that a
// trace of another schedule is caught when it is read back.
std::string measured_run_json(const MeasuredRun& m, const sim::Schedule& s);
// InputError (file, and the first task that differs) when the file does not belong to `s`.
MeasuredRun parse_measured_run(const std::string& text, const std::string& file, const sim::Schedule& s);
MeasuredRun load_measured_run(const std::string& path, const sim::Schedule& s);

struct TaskComparison {
  int task = -1;
  double predicted_start = 0, predicted_s = 0;
  double measured_start = 0, measured_s = 0;
};
struct StreamComparison {
  double predicted_busy = 0, measured_busy = 0;  // summed task time on the stream
  int tasks = 0;
};
struct CategoryComparison {
  double predicted = 0, measured = 0;
  int tasks = 0;
};

struct CheckComparison {
  std::string policy;
  double predicted_step = 0, measured_step = 0;
  std::vector<TaskComparison> tasks;  // schedule order
  std::array<StreamComparison, sim::kStreams> streams{};
  std::array<CategoryComparison, 10> categories{};  // by sim::Category
  double error() const { return predicted_step / measured_step - 1; }
};

// InputError when the record does not cover the schedule.
CheckComparison compare(const sim::StepResult& predicted, const MeasuredRun& measured);
// Per policy: measured against predicted step time; per stream busy time; per category; the
// `top` tasks furthest from their prediction.
std::string comparison_report(const std::vector<CheckComparison>& c, const std::vector<sim::StepResult>& predicted,
                              int top = 12);
// The measured run as a Chrome trace, laid out as the predicted one (sim::chrome_trace).
std::string measured_trace(const sim::StepResult& predicted, const MeasuredRun& m, const std::string& title);

// The box must hold the scenario: one node (one process drives every GPU), no more GPUs per node
// than the box lends. InputError naming both sizes and the way out (--cluster <box cluster file>).
void check_fits_box(const sim::StepSetup& setup, int box_gpus, const std::string& scenario);

// The executor runs each unit's kernel list: InputError naming a unit that has none.
void check_runnable(const sim::StepSetup& setup);

// --dry-run: for each policy, the schedule (tasks per stream and category), the collectives and
// kernel shapes it would run, and the files it would write.
std::string check_plan_text(const sim::StepSetup& setup, const std::vector<sim::StepResult>& predicted,
                            const std::string& scenario, const std::string& out_dir, int box_gpus);

}  // namespace tagcsim::calibrate
