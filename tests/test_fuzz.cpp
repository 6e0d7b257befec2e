// Mutation fuzz of the input layer: scenarios/*.yaml, mutated a few hundred times with a fixed
// seed, must each either load or stop with one InputError line; `tagcsim run` on them must exit
// 0 or 2 with one line, never crash, print an internal error or hang. Every input that once got
// through is kept below as a regression case.
#include "command_testing.hpp"
#include "rng_testing.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>
#include <unistd.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

using namespace tagcsim;

namespace {

using test::Rng;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

const char* kValues[] = {"-1",   "0",        "1e30",        "abc",           "",        "[]",         "{}",
                         "400",  "400 Gbit", "nan",         "99999999999",   "1 Gb/s",  "[1, 2]",     "{preset: x}",
                         "true", "0.5",      "~",           "'",             "2 ms",    "bisect",     "8bit-max",
                         "dgx-h100-ib400", "4bit-sum", "hybrid_shard", "[fsdp, tagc]", "{zip: {}}", "1.5", "-0"};
const char* kKeys[] = {"nodes",    "preset",   "cluster",   "model",       "sweep",       "zip",        "training",
                       "ratio",    "index",    "nics",      "bandwidth",   "per_node",    "global_batch", "micro_batch",
                       "seq_len",  "policies", "compression", "select",    "sharding",    "hybrid_shard_gpus",
                       "cluster.nodes", "training.global_batch", "gpu", "fabric", "kind", "label", "name"};
const char kChars[] = " :-[]{},#'\"\t\n0a.";

std::string mutate(const std::string& text, Rng& rng) {
  auto lines = lines_of(text);
  const int n = 1 + int(rng.below(3));
  for (int m = 0; m < n && !lines.empty(); ++m) {
    const std::size_t i = rng.below(lines.size());
    std::string& l = lines[i];
    const auto colon = l.find(':');
    switch (rng.below(10)) {
      case 0: lines.erase(lines.begin() + long(i)); break;
      case 1: lines.insert(lines.begin() + long(i), l); break;
      case 2:
        if (i + 1 < lines.size()) std::swap(lines[i], lines[i + 1]);
        break;
      case 3: {
        const std::size_t k = rng.below(3);
        if (k == 0) l = "  " + l;
        if (k == 1 && l.rfind("  ", 0) == 0) l = l.substr(2);
        if (k == 2) l = " " + l;
        break;
      }
      case 4:
        if (colon != std::string::npos) l = l.substr(0, colon + 1) + " " + kValues[rng.below(std::size(kValues))];
        break;
      case 5:
        if (colon != std::string::npos) {
          const auto indent = l.find_first_not_of(' ');
          l = l.substr(0, indent == std::string::npos ? 0 : indent) + kKeys[rng.below(std::size(kKeys))] + l.substr(colon);
        }
        break;
      case 6:
        if (!l.empty()) l.erase(rng.below(l.size()), 1);
        break;
      case 7: l.insert(rng.below(l.size() + 1), 1, kChars[rng.below(sizeof(kChars) - 1)]); break;
      case 8: lines.resize(i); break;
      case 9: {
        const auto d = l.find_first_of("0123456789");
        if (d != std::string::npos) l.insert(d, rng.below(2) ? "000" : "0.");
        break;
      }
    }
  }
  return join_lines(lines);
}

std::vector<std::string> base_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TAGCSIM_SOURCE_DIR) + "/scenarios"))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

Outcome tagcsim_run(const std::string& path) {
  // `timeout` turns a hang into exit code 124.
  return run_command(fmt::format("timeout 60 {} run {} --format csv", TAGCSIM_BINARY, path));
}

// Loads `text` in process: either a scenario whose --resolved form loads to the same YAML again,
// or one InputError line. Returns the scenario's result count (0 when refused).
std::size_t check_in_process(const std::string& text) {
  scenarios::Scenario s;
  try {
    s = scenarios::parse_scenario(text, "mutant.yaml");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(!what.empty(), text);
    CHECK_MESSAGE(what.find('\n') == std::string::npos, text);
    return 0;
  } catch (const std::exception& e) {
    FAIL_CHECK("not an input error: " << std::string(e.what()) << "\n--- input:\n" << text);
    return 0;
  }
  try {
    const std::string resolved = scenarios::resolved_yaml(s);
    const auto again = scenarios::parse_scenario(resolved, "mutant.yaml");
    CHECK_MESSAGE(scenarios::resolved_yaml(again) == resolved, text);
    CHECK_MESSAGE(again.points.size() == s.points.size(), text);
  } catch (const std::exception& e) {
    FAIL_CHECK("the resolved scenario does not load: " << std::string(e.what()) << "\n--- input:\n" << text);
  }
  std::size_t results = 0;
  for (const auto& p : s.points) results += p.policies.size();
  return results;
}

}  // namespace

TEST_CASE("mutated scenarios load or stop with one input-error line, and tagcsim run exits 0 or 2 with one line") {
  // TAGCSIM_FUZZ_SEED and TAGCSIM_FUZZ_COUNT explore further; the defaults are the test.
  const char* seed = std::getenv("TAGCSIM_FUZZ_SEED");
  const char* count = std::getenv("TAGCSIM_FUZZ_COUNT");
  Rng rng{seed ? std::stoull(seed) : 0x7a6c5e1d2b3a4f59ull};
  const int per_file = count ? std::stoi(count) : 40;
  int refused = 0, loaded = 0, ran = 0;
  for (const auto& file : base_files()) {
    const std::string text = read_text(file);
    for (int k = 0; k < per_file; ++k) {
      const std::string mutant = mutate(text, rng);
      const std::size_t results = check_in_process(mutant);
      (results == 0 ? refused : loaded) += 1;
      // Through the CLI as well, but only the small ones: the simulation of a large sweep is slow.
      if (k % 4 != 0 || results > 8) continue;
      const std::string path = fmt::format("/tmp/tagcsim_fuzz_{}_{}.yaml", ::getpid(), k);
      std::ofstream(path) << mutant;
      const auto o = tagcsim_run(path);
      ++ran;
      CHECK_MESSAGE((o.code == 0 || o.code == 2), "exit " << o.code << ": " << o.output << "\n--- input:\n" << mutant);
      CHECK_MESSAGE(o.output.find("internal error") == std::string::npos, o.output << "\n--- input:\n" << mutant);
      if (o.code == 2) {
        CHECK_MESSAGE(o.output.rfind("tagcsim: error: ", 0) == 0, o.output);
        CHECK_MESSAGE(std::count(o.output.begin(), o.output.end(), '\n') == 1, o.output);
      }
    }
  }
  MESSAGE(fmt::format("{} mutants refused, {} loaded, {} run through the CLI", refused, loaded, ran));
  // The mutations must exercise both outcomes, or the fuzz tests nothing.
  CHECK(refused > 50);
  CHECK(loaded > 20);
}

TEST_CASE("regressions found by the fuzz: each is one input error line") {
  const char* cases[] = {
      // No cluster at all, but a sweep over one of its keys (was: internal error, yaml-cpp bad conversion).
      "model: llama2-7b\nsweep:\n  cluster.nodes: [2, 4]\n",
      // A map standing as a key, from a stray ':' after a flow map (was: internal error, bad conversion).
      "model: llama2-7b\ncluster: dgx-h100-ib400\npolicies:\n  - {name: tagc, ratio: 2}  :\n",
  };
  for (const char* text : cases) {
    CAPTURE(text);
    CHECK_THROWS_AS(scenarios::parse_scenario(text, "t.yaml"), InputError);
    CHECK(check_in_process(text) == 0);
  }
}
