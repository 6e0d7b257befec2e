// A run's own training log against the prediction (calibrate/training_log.hpp, `tagcsim calibrate log`).
#include "calibrate/training_log.hpp"
#include "command_testing.hpp"
#include "common/input.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;

namespace {

// torchtitan's step lines as rank 0 prints them (2025), colour codes and all.
const std::string kTitanLog =
    "[rank0]:[titan] 2025-10-15 10:37:00,100 - root - INFO - Training starts at step 1\n"
    "[rank0]:[titan] 2025-10-15 10:37:01,390 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: 12.2465  grad_norm:  4.5253  "
    "\x1b[33mmemory: 33.21GiB(34.95%)  \x1b[34mtps: 86  \x1b[36mtflops: 4.98  \x1b[35mmfu: 0.50%\x1b[39m\n"
    "[rank0]:[titan] 2025-10-15 10:37:07,957 - root - INFO - step: 10  loss: 10.2391  grad_norm: 16.1413  "
    "memory: 44.84GiB(47.19%)  tps: 5,615  tflops: 325.20  mfu: 32.88%\n"
    "[rank0]:[titan] 2025-10-15 10:37:14,521 - root - INFO - step: 20  loss:  9.1021  grad_norm:  3.0113  "
    "memory: 44.90GiB(47.25%)  tps: 5,702  tflops: 330.25  mfu: 33.39%\n"
    "[rank0]:[titan] 2025-10-15 10:37:21,066 - root - INFO - step: 30  loss:  8.5532  grad_norm:  2.4121  "
    "memory: 44.90GiB(47.25%)  tps: 5,690  tflops: 329.55  mfu: 33.32%\n";

}  // namespace

TEST_CASE("a torchtitan log: each step line's tokens/s, memory and MFU, colour codes and thousands separators read") {
  const auto log = calibrate::parse_training_log(kTitanLog, "train.log");
  CHECK(log.format == "torchtitan");
  REQUIRE(log.steps.size() == 4);
  CHECK(log.steps[0].step == 1);
  CHECK(log.steps[0].tokens_per_s_per_gpu == 86);
  CHECK(log.steps[1].step == 10);
  CHECK(log.steps[1].tokens_per_s_per_gpu == 5615);
  CHECK(log.steps[1].memory_gib == Approx(44.84));
  CHECK(log.steps[1].mfu == Approx(0.3288));
  // torchtitan before Oct 2024 printed words per second.
  const auto old = calibrate::parse_training_log(
      "step: 10  loss:  9.9683  memory: 40.12GiB(50.82%)  wps: 5,825  mfu: 34.16%\n", "old.log");
  REQUIRE(old.steps.size() == 1);
  CHECK(old.steps[0].tokens_per_s_per_gpu == 5825);
  CHECK(old.steps[0].memory_gib == Approx(40.12));
}

TEST_CASE("a Composer log: the per-device throughput of each batch the console logger printed") {
  const auto log = calibrate::parse_training_log(
      "[batch=1/100]:\n\t Train time/batch: 0\n\t Train throughput/device/tokens_per_sec: 1.2e3\n"
      "[epoch=1][batch=2/100]:\n\t Train throughput/device/tokens_per_sec: 18455.1\n"
      "[batch=3/100]:\n\t Train throughput/device/tokens_per_sec: 18460.9\n",
      "composer.log");
  CHECK(log.format == "composer");
  REQUIRE(log.steps.size() == 3);
  CHECK(log.steps[0].tokens_per_s_per_gpu == 1200);
  CHECK(log.steps[1].step == 2);
  CHECK(log.steps[2].tokens_per_s_per_gpu == Approx(18460.9));
  CHECK(log.steps[2].memory_gib == 0);
}

TEST_CASE("a log without a known step line, or with a throughput before its step, is refused with file and line") {
  CHECK_THROWS_WITH_AS(calibrate::parse_training_log("epoch 1 loss 2.3\n", "run.log"),
                       Contains("run.log: no step with a throughput in it: expected torchtitan's"), InputError);
  CHECK_THROWS_WITH_AS(calibrate::parse_training_log("start\n Train throughput/device/tokens_per_sec: 10\n", "c.log"),
                       Contains("c.log:2: a Composer throughput line before any '[batch=N/M]' line"), InputError);
  CHECK_THROWS_WITH_AS(calibrate::load_training_log(temp_path("missing.log")), Contains("cannot read the training log"),
                       InputError);
}

TEST_CASE("the summary drops the warm-up steps and takes the median of the rest, with its spread") {
  const auto log = calibrate::parse_training_log(kTitanLog, "train.log");
  const auto s = calibrate::summarize(log);  // step 1 (86 tokens/s: the compile) dropped
  CHECK(s.dropped == 1);
  CHECK(s.kept == 3);
  CHECK(s.tokens_per_s_per_gpu == 5690);  // of 5615, 5690, 5702
  CHECK(s.p10 == Approx(5615 + 0.2 * (5690 - 5615)));
  CHECK(s.p90 == Approx(5690 + 0.8 * (5702 - 5690)));
  CHECK(s.memory_gib == Approx(44.90));
  CHECK(s.mfu == Approx(0.3332));
  CHECK(s.first_step == 10);
  CHECK(s.last_step == 30);
  const auto later = calibrate::summarize(log, 15);  // steps 1 and 10 dropped
  CHECK(later.kept == 2);
  CHECK(later.tokens_per_s_per_gpu == Approx((5702 + 5690) / 2.0));
  CHECK_THROWS_WITH_AS(calibrate::summarize(log, 30), Contains("every step logged is warm-up (steps up to 30)"),
                       InputError);
}

TEST_CASE("calibrate log: the log's median against tagcsim run's tokens/s/GPU for the same scenario") {
  const std::string scenario = std::string(TAGCSIM_SOURCE_DIR) + "/scenarios/quickstart.yaml";
  const auto log = write_temp("train.log", kTitanLog);
  const auto csv = run_tagcsim("run " + scenario + " --format csv");
  REQUIRE(csv.code == 0);
  // The fsdp row's tokens_per_s_per_gpu, the 7th column.
  std::smatch m;
  REQUIRE(std::regex_search(csv.output, m, std::regex("\nfsdp,fsdp,32,[^,]+,[^,]+,([^,]+),")));
  const double predicted = std::stod(m[1]);
  const auto o = run_tagcsim("calibrate log " + scenario + " " + log);
  CHECK(o.code == 0);
  CHECK(o.output.find("measured: the median of 3 torchtitan records, steps 10 to 30 (p10 5630, p90 5700); 1 dropped "
                      "as warm-up") != std::string::npos);
  CHECK(o.output.find(fmt::format("tokens/s/GPU            5690{:>12.0f}{:>9}", predicted,
                                  fmt::format("{:+.1f}%", 100 * (predicted / 5690 - 1)))) != std::string::npos);
  CHECK(o.output.find("peak memory         44.9 GiB") != std::string::npos);
  // Given as a number instead: the same comparison.
  const auto given = run_tagcsim("calibrate log " + scenario + " --measured 5690");
  CHECK(given.code == 0);
  CHECK(given.output.find("measured: as given (--measured)") != std::string::npos);
  CHECK(given.output.find(fmt::format("tokens/s/GPU            5690{:>12.0f}", predicted)) != std::string::npos);
}

TEST_CASE("calibrate log --entry keeps the run as a row that validate --root predicts") {
  namespace fs = std::filesystem;
  const std::string scenario = std::string(TAGCSIM_SOURCE_DIR) + "/scenarios/quickstart.yaml";
  const auto log = write_temp("entry.log", kTitanLog);
  const std::string root = temp_path("runs");
  fs::remove_all(root);
  const auto o = run_tagcsim("calibrate log " + scenario + " " + log + " --entry " + root + " --id ours-llama2-7b-32gpu");
  CHECK(o.code == 0);
  CHECK(fs::exists(root + "/validation/data/measured_fsdp_ours-llama2-7b-32gpu.yaml"));
  CHECK(fs::exists(root + "/scenarios/validation/ours-llama2-7b-32gpu.yaml"));
  const auto v = run_tagcsim("validate --root " + root);
  CHECK(v.code == 0);
  CHECK(v.output.find("| ours-llama2-7b-32gpu | OURS | llama2-7b | 32 | 4096 | 5690 |") != std::string::npos);
  // The same id again would overwrite a kept run: refused.
  const auto again = run_tagcsim("calibrate log " + scenario + " " + log + " --entry " + root + " --id ours-llama2-7b-32gpu");
  CHECK(again.code == 2);
  CHECK(again.output.find("exists already: choose another --id") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("calibrate log refuses a sweep, a log and a number at once, and an --entry without its id") {
  const std::string dir = std::string(TAGCSIM_SOURCE_DIR) + "/scenarios/";
  const auto log = write_temp("refuse.log", kTitanLog);
  const auto sweep = run_tagcsim("calibrate log " + dir + "strong-scaling-llama2-13b.yaml " + log);
  CHECK(sweep.code == 2);
  CHECK(sweep.output.find("a log is one run, and this scenario sweeps") != std::string::npos);
  const auto both = run_tagcsim("calibrate log " + dir + "quickstart.yaml " + log + " --measured 100");
  CHECK(both.code == 2);
  CHECK(both.output.find("expected a training log, or the measured tokens/s per GPU with --measured") != std::string::npos);
  const auto unwritable = run_tagcsim("calibrate log " + dir + "quickstart.yaml " + log + " --entry /proc/tagcsim --id x");
  CHECK(unwritable.code == 2);
  CHECK(unwritable.output.find("--entry: cannot create /proc/tagcsim/validation/data: ") != std::string::npos);
  const auto no_id = run_tagcsim("calibrate log " + dir + "quickstart.yaml " + log + " --entry /tmp/x");
  CHECK(no_id.code == 2);
  CHECK(no_id.output.find("--entry: give the row's id as well (--id)") != std::string::npos);
}

TEST_CASE("every torchtitan log line the shipped data quotes reads back as its entry's tokens/s/GPU and memory") {
  // Published lines as their authors pasted them (rank prefixes, grad_norm, tflops, 2025's and early
  // 2025's layouts): the parser must read what the entries were typed from.
  namespace fs = std::filesystem;
  const std::regex quoted(R"((step:\s*\d+.*?tps:\s*[0-9][0-9,]*))");
  int lines = 0;
  for (const auto& f : fs::directory_iterator(std::string(TAGCSIM_SOURCE_DIR) + "/validation/data")) {
    const auto name = f.path().filename().string();
    if (name.rfind("published_fsdp_", 0) != 0) continue;
    const Input entries = Input::load_file(f.path().string())["entries"];
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Input e = entries.at(i);
      const auto notes = e.find("notes");
      if (!notes) continue;
      const std::string text = notes->as_string();
      std::smatch m;
      if (!std::regex_search(text, m, quoted)) continue;
      CAPTURE(e["id"].as_string());
      const auto log = calibrate::parse_training_log(m[1].str(), name);
      REQUIRE(log.steps.size() == 1);
      CHECK(log.steps[0].tokens_per_s_per_gpu == e["measured"]["tokens_per_s_per_gpu"].as_double());
      if (const auto mem = e["measured"].find("peak_memory_GiB"))
        CHECK(log.steps[0].memory_gib == Approx(mem->as_double()));
      ++lines;
    }
  }
  // AWS's two, torchtitan#1196's two, torchtitan#1690's eight, #822's two, #808's two, #812's two, #833's one
  // and #996's one.
  CHECK(lines == 20);
}
