// The numbers the README and the docs quote are what the tool and its generated files say: a
// newcomer reads them first, and a number gone stale there is the first thing they cannot trust.
#include "command_testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read_file(const std::string& relative) {
  const std::string path = std::string(TAGCSIM_SOURCE_DIR) + "/" + relative;
  REQUIRE_MESSAGE(std::ifstream(path).good(), relative);
  return read_text(path);
}

// Prose wraps wherever the editor put the line break; compare it as one line.
std::string one_line(std::string text) {
  for (auto& c : text)
    if (c == '\n') c = ' ';
  return text;
}

// Each line of an example block must be a line of the output: "  ..." stands for lines left out,
// and a line ending in "; ..." for one cut short there.
void check_example(const std::string& block, const std::string& output, const std::string& where) {
  std::istringstream lines(block);
  for (std::string line; std::getline(lines, line);) {
    if (line == "  ...") continue;
    const auto cut = line.rfind("; ...");
    const bool shortened = cut != std::string::npos && cut + 5 == line.size();
    std::string wanted(1, '\n');  // a whole line of the output, or the start of one
    wanted += shortened ? line.substr(0, cut + 1) : line + '\n';
    CHECK_MESSAGE(("\n" + output).find(wanted) != std::string::npos, where << ": not in the output: " << line);
  }
}

// The code block of `doc` that starts with `first_line`.
std::string example_block(const std::string& doc, const std::string& first_line) {
  const auto start = doc.find("```\n" + first_line);
  REQUIRE_MESSAGE(start != std::string::npos, first_line);
  return doc.substr(start + 4, doc.find("```", start + 4) - start - 4);
}

// The cells of a markdown table row ("| a | b |" -> {"a", "b"}); empty where `line` is no row.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  if (line.size() < 2 || line.front() != '|' || line.back() != '|') return out;
  std::istringstream in(line.substr(1, line.size() - 2));
  for (std::string cell; std::getline(in, cell, '|');) {
    const auto first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
    out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return out;
}

double percent(const std::string& cell) { return std::stod(cell.substr(0, cell.find('%'))); }

}  // namespace

TEST_CASE("the README's quick-start table is what tagcsim run scenarios/quickstart.yaml prints") {
  const std::string table = example_block(read_file("README.md"), "policy ");
  const auto run = run_command(std::string(TAGCSIM_BINARY) + " run " + TAGCSIM_SOURCE_DIR + "/scenarios/quickstart.yaml");
  REQUIRE(run.code == 0);
  check_example(table, run.output, "README.md");
  CHECK(std::count(table.begin(), table.end(), '\n') == 4);  // the heading and the three policies
}

TEST_CASE("the README's collective table quotes the held-out lines that runs print") {
  const std::string readme = read_file("README.md");
  const std::string held_out = read_file("calibrate/profiles/collective-held-out.yaml");
  // README row -> the held-out file's key(s), in the order the row gives their median / p90.
  const std::map<std::string, std::vector<std::string>> rows = {
      {"| one H100/H200 node, NVLink 4 |", {"one_node_nvlink4"}},
      {"| InfiniBand |", {"ib"}},
      {"| RoCE |", {"roce"}},
      {"| AWS EFA |", {"efa"}},
      {"| GCP TCPXO / TCPX |", {"tcpxo", "tcpx"}},
      {"| inside a GB200 or GB300 NVL72 rack |", {"one_node_nvlink5_nvl72"}},
      {"| HPE Slingshot-11, no fitted table (priors only) |", {"slingshot"}},
  };
  const std::regex readme_pair(R"(([0-9.]+)% / ([0-9.]+)%)");
  for (const auto& [label, keys] : rows) {
    const auto at = readme.find("\n" + label);
    REQUIRE_MESSAGE(at != std::string::npos, label);
    const std::string row = readme.substr(at + 1, readme.find('\n', at + 1) - at - 1);
    auto pair = std::sregex_iterator(row.begin(), row.end(), readme_pair);
    for (const auto& key : keys) {
      REQUIRE_MESSAGE(pair != std::sregex_iterator(), row);
      const auto line_at = held_out.find("\n  " + key + ": ");
      REQUIRE_MESSAGE(line_at != std::string::npos, key);
      const std::string line = held_out.substr(line_at, held_out.find('\n', line_at + 1) - line_at);
      const std::string quoted = ">= 1 MiB median " + (*pair)[1].str() + "%, p90 " + (*pair)[2].str() + "%";
      CHECK_MESSAGE(line.find(quoted) != std::string::npos, key << ": README says " << quoted << "; the file: " << line);
      ++pair;
    }
  }
}

TEST_CASE("the README's FSDP numbers are docs/validation.md's generated held-out summary") {
  const std::string readme = one_line(read_file("README.md"));
  const std::string validation = read_file("docs/validation.md");
  // | leave one source out (held out) | rows | median | mean | p90 | max (row) | past 15% | mean signed |
  const std::regex summary(R"(\| leave one source out \(held out\) \| (\d+) \| ([0-9.]+)% \| ([0-9.]+)% \| ([0-9.]+)% \| [^|]+\| (\d+) \|)");
  std::smatch m;
  REQUIRE(std::regex_search(validation, m, summary));
  const std::string rows = m[1], median = m[2], mean = m[3], p90 = m[4], past = m[5];
  CHECK(readme.find("| " + rows + " runs of ") != std::string::npos);
  CHECK(readme.find(median + "% / " + p90 + "% |") != std::string::npos);
  CHECK(readme.find("predicts " + rows + " published runs") != std::string::npos);
  CHECK(readme.find("median error " + median + "%, mean " + mean + "%, p90 " + p90 + "%, " + past + " rows past 15%") !=
        std::string::npos);
}

TEST_CASE("the README's kernel rows quote tagcsim validate --kernels's summary") {
  const std::string readme = read_file("README.md");
  const auto run = run_command(std::string(TAGCSIM_BINARY) + " validate --kernels");
  REQUIRE(run.code == 0);
  // "<profile> <kind> n median% p90% max% unpredicted" -> "n", "median% / p90%" as the README rounds them.
  const auto summary = [&](const std::string& profile, const std::string& kind) {
    const std::regex line("\\n" + profile + " +" + kind + " +(\\d+) +([0-9.]+)% +([0-9.]+)%");
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_search(run.output, m, line), profile << " " << kind);
    return std::make_pair(m[1].str(), m[2].str() + "% / " + m[3].str() + "%");
  };
  const auto [h100_n, h100] = summary("device-h100-sxm", "attention");
  const auto [b200_n, b200] = summary("device-b200", "attention");
  const std::string row = "| " + h100_n + " points of the H100 profile's three sources, " + b200_n +
                          " of the B200's two (`tagcsim validate --kernels`) | " + h100 + ", " + b200 + " |";
  CHECK_MESSAGE(readme.find(row) != std::string::npos, "README.md: not found: " << row);
  // The GEMM row rounds the p90 to a whole percent.
  const std::regex gemm("\\nall +gemm +(\\d+) +([0-9.]+)% +([0-9.]+)%");
  std::smatch m;
  REQUIRE(std::regex_search(run.output, m, gemm));
  const std::string gemm_row = "| GEMM kernels | " + m[1].str() + " points of the shipped kernel profiles (`tagcsim validate --kernels`) | " +
                               m[2].str() + "% / " + std::to_string(std::lround(std::stod(m[3].str()))) + "% |";
  CHECK_MESSAGE(readme.find(gemm_row) != std::string::npos, "README.md: not found: " << gemm_row);
}

TEST_CASE("docs/comparison.md's accuracy rows quote the held-out summary and lines the tool writes") {
  const std::string comparison = read_file("docs/comparison.md");
  const std::string validation = read_file("docs/validation.md");
  const std::string held_out = read_file("calibrate/profiles/collective-held-out.yaml");
  const std::regex summary(R"(\| leave one source out \(held out\) \| (\d+) \| ([0-9.]+)% \| ([0-9.]+)% \| ([0-9.]+)% \| ([0-9.]+)%)");
  std::smatch m;
  REQUIRE(std::regex_search(validation, m, summary));
  CHECK(comparison.find("| tagcsim, training step | " + m[1].str() + " counted published FSDP rows") != std::string::npos);
  CHECK(comparison.find("median " + m[2].str() + "%, mean " + m[3].str() + "%, 90% of rows within " + m[4].str() +
                        "%, max " + m[5].str() + "%") != std::string::npos);
  // The one-node line and InfiniBand's, at 1 MiB and up, as every run quotes them.
  struct Quote {
    const char* key;     // in the held-out file
    const char* before;  // the doc's words before the median, and between it and the p90
    const char* between;
  };
  for (const auto& q : {Quote{"one_node_nvlink4", "| >= 1 MiB median ", "%, p90 "},
                        Quote{"ib", "(InfiniBand alone, with the tables found after the fit, 2-10 nodes: ", "% / "}}) {
    const auto at = held_out.find("\n  " + std::string(q.key) + ": ");
    REQUIRE(at != std::string::npos);
    std::smatch pair;
    const std::string line = held_out.substr(at, held_out.find('\n', at + 1) - at);
    REQUIRE(std::regex_search(line, pair, std::regex(R"(>= 1 MiB median ([0-9.]+)%, p90 ([0-9.]+)%)")));
    const std::string expected = q.before + pair[1].str() + q.between + pair[2].str() + "%";
    CHECK_MESSAGE(comparison.find(expected) != std::string::npos, q.key << ": " << expected);
  }
}

TEST_CASE("docs/tagc-paper.md's tables are what scripts/tagc-paper-tables.sh generates from the scenarios") {
  const std::string doc = read_file("docs/tagc-paper.md");
  const auto run = run_command(std::string("TAGCSIM=") + TAGCSIM_BINARY + " bash " + TAGCSIM_SOURCE_DIR +
                               "/scripts/tagc-paper-tables.sh");
  REQUIRE(run.code == 0);
  std::istringstream lines(run.output);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0) continue;  // headings, blank lines, separators
    ++rows;
    CHECK_MESSAGE(doc.find("\n" + line + "\n") != std::string::npos,
                  "not in docs/tagc-paper.md (rerun the script and paste its tables): " << line);
  }
  CHECK(rows > 60);  // seven tables
}

TEST_CASE("docs/output.md's quickstart header and kernel list are what tagcsim prints") {
  const std::string doc = read_file("docs/output.md");
  const std::string scenario = std::string(TAGCSIM_SOURCE_DIR) + "/scenarios/quickstart.yaml";
  const auto run = run_command(std::string(TAGCSIM_BINARY) + " run " + scenario);
  const auto kernels = run_command(std::string(TAGCSIM_BINARY) + " run " + scenario + " --kernels");
  REQUIRE(run.code == 0);
  REQUIRE(kernels.code == 0);
  check_example(example_block(doc, "quickstart: llama2-7b"), run.output, "docs/output.md, the header");
  check_example(example_block(doc, "block.0 (32 units"), kernels.output, "docs/output.md, --kernels");
}

TEST_CASE("the README's mixture-of-experts row quotes the held-out range docs/validation.md lists") {
  // The rows kept out of the fit as mixtures of experts (their reason says so), held out: the
  // README gives the range rounded to whole percents, and DeepSeek-V3 16B's row to a tenth.
  double lo = 1e9, hi = -1e9;
  std::string deepseek;
  std::istringstream doc(read_file("docs/validation.md"));
  for (std::string line; std::getline(doc, line);) {
    const auto c = cells(line);
    if (c.size() != 14 || c[0].find("A mixture of experts") == std::string::npos || c[9] == "-") continue;
    lo = std::min(lo, percent(c[9])), hi = std::max(hi, percent(c[9]));
    if (c[0].rfind("fsdp-tt1789-deepseek-v3-16b", 0) == 0) deepseek = c[9];
  }
  REQUIRE(hi > lo);
  REQUIRE_FALSE(deepseek.empty());
  const auto whole = [](double v) { return (v > 0 ? "+" : "") + std::to_string(std::lround(v)) + "%"; };
  const std::string row = "| " + whole(lo) + " to " + whole(hi) + " | counted, never fitted; DeepSeek-V3 16B with expert "
                          "parallelism " + deepseek + " |";
  CHECK_MESSAGE(read_file("README.md").find(row) != std::string::npos, "README.md: not found: " << row);
}

TEST_CASE("docs/validation.md's rows are what tagcsim validate predicts with the shipped fit") {
  // The page is written by `tagcsim validate --fit --loso --doc`, whose fit is the shipped one
  // before rounding to four figures: each prediction agrees to 0.1% (or its last digit), each MFU to 0.002.
  std::map<std::string, std::vector<std::string>> page;  // id -> the row of the first table
  std::istringstream doc(read_file("docs/validation.md"));
  for (std::string line; std::getline(doc, line);)
    if (auto c = cells(line); c.size() == 14 && c[0].rfind("fsdp-", 0) == 0) page.emplace(c[0], c);
  const auto run = run_command(std::string(TAGCSIM_BINARY) + " validate");
  REQUIRE(run.code == 0);
  std::istringstream rows(run.output);
  std::size_t seen = 0;
  for (std::string line; std::getline(rows, line);) {
    // | id | src | model | GPUs | seq | measured | predicted | error | MFU published | ours | Megatron | peak mem |
    const auto c = cells(line);
    if (c.size() != 12 || c[0].rfind("fsdp-", 0) != 0) continue;
    ++seen;
    const auto it = page.find(c[0]);
    REQUIRE_MESSAGE(it != page.end(), "not in docs/validation.md: " << c[0]);
    const auto& d = it->second;  // the same, with the held-out prediction and error after the error
    INFO(c[0]);
    for (std::size_t i = 1; i <= 5; ++i) CHECK(d[i] == c[i]);  // source, model, GPUs, sequence, measured
    // 0.1%, or one in the last printed digit (a prediction of 902.5 prints 902 or 903).
    CHECK(std::abs(std::stod(d[6]) - std::stod(c[6])) <= std::max(0.001 * std::stod(c[6]), 1.0));
    CHECK(std::abs(percent(d[7]) - percent(c[7])) <= 0.15);
    CHECK(d[10] == c[8]);   // the published MFU
    for (std::size_t i : {9, 10})  // ours and Megatron's
      CHECK(std::abs(std::stod(d[i + 2]) - std::stod(c[i])) <= 0.002);
    CHECK(d[13] == c[11]);  // the memory
  }
  CHECK(seen == page.size());
}

TEST_CASE("docs/validation.md's opening counts the rows and sources tagcsim validate lists") {
  const std::string intro = one_line(read_file("docs/validation.md").substr(0, 2000));
  std::smatch published, own;
  REQUIRE(std::regex_search(intro, published,
                            std::regex(R"(shipped in `validation/data/`: (\d+) rows from (\d+) sources \((\d+) counted\))")));
  REQUIRE(std::regex_search(intro, own, std::regex(R"(own: (\d+) FSDP2 steps .*\(S63, (\d+) counted\))")));
  const auto run = run_command(std::string(TAGCSIM_BINARY) + " validate");
  REQUIRE(run.code == 0);
  std::istringstream rows(run.output);
  int published_rows = 0, published_counted = 0, own_rows = 0, own_counted = 0;
  std::vector<std::string> sources;
  for (std::string line; std::getline(rows, line);) {
    const auto c = cells(line);  // | id | src | ... : the first table's rows
    if (c.size() != 12 || c[0].rfind("fsdp-", 0) != 0) continue;
    const bool counted = c[0].find("(not counted") == std::string::npos;
    if (c[1] == "S63") {
      ++own_rows;
      own_counted += counted;
      continue;
    }
    ++published_rows;
    published_counted += counted;
    if (std::find(sources.begin(), sources.end(), c[1]) == sources.end()) sources.push_back(c[1]);
  }
  CHECK(std::stoi(published[1]) == published_rows);
  CHECK(std::stoi(published[2]) == int(sources.size()));
  CHECK(std::stoi(published[3]) == published_counted);
  CHECK(std::stoi(own[1]) == own_rows);
  CHECK(std::stoi(own[2]) == own_counted);
}
