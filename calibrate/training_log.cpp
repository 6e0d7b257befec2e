#include "calibrate/training_log.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace tagcsim::calibrate {
namespace {

// Terminal colour codes (torchtitan colours its log lines).
std::string without_colour(const std::string& line) {
  static const std::regex escape("\x1b\\[[0-9;]*m");
  return std::regex_replace(line, escape, "");
}

// "5,615" or "5615.2".
double number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',') digits += c;
  return std::stod(digits);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * double(v.size() - 1);
  const auto lo = std::size_t(at);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

}  // namespace

TrainingLog parse_training_log(const std::string& text, const std::string& path) {
  static const std::regex titan_step(R"(\bstep:\s*(\d+)\b)");
  static const std::regex titan_tps(R"(\b(?:tps|wps):\s*([0-9][0-9,]*(?:\.[0-9]+)?))");
  static const std::regex titan_memory(R"(\bmemory:\s*([0-9]+(?:\.[0-9]+)?)\s*GiB)");
  static const std::regex titan_mfu(R"(\bmfu:\s*([0-9]+(?:\.[0-9]+)?)%)");
  static const std::regex composer_batch(R"(\[batch=(\d+)/\d+\])");
  static const std::regex composer_tps(R"(throughput/device/tokens_per_sec:\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))");

  TrainingLog log;
  log.path = path;
  std::istringstream in(text);
  long composer_step = -1;
  int line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    const std::string line = without_colour(raw);
    std::smatch m, t;
    if (std::regex_search(line, m, titan_step) && std::regex_search(line, t, titan_tps)) {
      LoggedStep s;
      s.step = std::stol(m[1]);
      s.tokens_per_s_per_gpu = number(t[1]);
      if (std::smatch mem; std::regex_search(line, mem, titan_memory)) s.memory_gib = std::stod(mem[1]);
      if (std::smatch mfu; std::regex_search(line, mfu, titan_mfu)) s.mfu = std::stod(mfu[1]) / 100;
      if (!log.format.empty() && log.format != "torchtitan")
        throw InputError(path, line_no, "", "a torchtitan step line in a Composer log: give one run's log at a time");
      log.format = "torchtitan";
      log.steps.push_back(s);
      continue;
    }
    if (std::regex_search(line, m, composer_batch)) composer_step = std::stol(m[1]);
    if (std::regex_search(line, t, composer_tps)) {
      if (composer_step < 0)
        throw InputError(path, line_no, "", "a Composer throughput line before any '[batch=N/M]' line says its step");
      if (!log.format.empty() && log.format != "composer")
        throw InputError(path, line_no, "", "a Composer throughput line in a torchtitan log: give one run's log at a time");
      log.format = "composer";
      log.steps.push_back({composer_step, number(t[1]), 0, 0});
    }
  }
  if (log.steps.empty())
    throw InputError(fmt::format(
        "{}: no step with a throughput in it: expected torchtitan's 'step: N ... tps: X' (or 'wps: X') lines or "
        "Composer's '[batch=N/M]' with 'throughput/device/tokens_per_sec: X' (or give the number: --measured)",
        path));
  return log;
}

TrainingLog load_training_log(const std::string& path) {
  return parse_training_log(read_text_file(path, "cannot read the training log"), path);
}

LogSummary summarize(const TrainingLog& log, long warmup) {
  LogSummary s;
  if (log.steps.empty()) throw InputError(fmt::format("{}: no step logged", log.path));
  long first = log.steps.front().step;
  for (const auto& st : log.steps) first = std::min(first, st.step);
  const long last_warmup = warmup < 0 ? first : warmup;
  std::vector<double> tps, mfu;
  for (const auto& st : log.steps) {
    if (st.step <= last_warmup) {
      ++s.dropped;
      continue;
    }
    tps.push_back(st.tokens_per_s_per_gpu);
    if (st.mfu > 0) mfu.push_back(st.mfu);
    s.memory_gib = std::max(s.memory_gib, st.memory_gib);
    s.first_step = s.kept == 0 ? st.step : std::min(s.first_step, st.step);
    s.last_step = std::max(s.last_step, st.step);
    ++s.kept;
  }
  if (tps.empty())
    throw InputError(fmt::format("{}: every step logged is warm-up (steps up to {}): log more steps, or lower --warmup",
                                 log.path, last_warmup));
  s.tokens_per_s_per_gpu = quantile(tps, 0.5);
  s.p10 = quantile(tps, 0.1);
  s.p90 = quantile(tps, 0.9);
  if (!mfu.empty()) s.mfu = quantile(mfu, 0.5);
  return s;
}

}  // namespace tagcsim::calibrate
