// A training run's own log, read for what tagcsim predicts: tokens/s per GPU and peak memory per
// step, as the framework printed them (`tagcsim calibrate log`, docs/validation.md "Checking your
// own runs").
//
//   torchtitan  "step: 10  loss: 9.97  memory: 44.84GiB(47.19%)  tps: 5,615  tflops: 325.20  mfu: 32.88%"
//               (before Oct 2024 "wps:" for tps); tps is tokens/s per GPU, memory its max reserved.
//   Composer    "[batch=10/100]:" followed by "Train throughput/device/tokens_per_sec: 18455.1"
//               (LLM Foundry's runs); per GPU as well. No memory: its monitor's unit is configurable.
//
// Lines of every rank count alike ("[rank3]:" prefixes, colour codes are skipped).
#pragma once

#include <string>
#include <vector>

namespace tagcsim::calibrate {

struct LoggedStep {
  long step = 0;
  double tokens_per_s_per_gpu = 0;
  double memory_gib = 0;  // 0: not logged
  double mfu = 0;         // as a fraction, as the framework counts it; 0: not logged
};

struct TrainingLog {
  std::string path;
  std::string format;  // "torchtitan" or "composer"
  std::vector<LoggedStep> steps;  // every record, in the order logged (all ranks)
};

// InputError naming the file when no line of a known format is in it.
TrainingLog parse_training_log(const std::string& text, const std::string& path);
TrainingLog load_training_log(const std::string& path);

struct LogSummary {
  double tokens_per_s_per_gpu = 0;  // the median of the records kept
  double p10 = 0, p90 = 0;          // their spread
  double memory_gib = 0;            // the largest kept, 0 when none was logged
  double mfu = 0;                   // the median logged, 0 when none was
  int kept = 0, dropped = 0;        // records kept, and dropped as warm-up
  long first_step = 0, last_step = 0;
};

// Records of steps up to `warmup` are warm-up (compilation, the allocator's first growth,
// torchtitan's step 1); warmup < 0 drops the first step logged. InputError when none is left.
LogSummary summarize(const TrainingLog& log, long warmup = -1);

}  // namespace tagcsim::calibrate
