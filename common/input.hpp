// Checked reading of user input (YAML files and command-line values).
//
// Every error a user can cause ends up as an InputError whose message names
// the file, the line and the key path, and says what was expected:
//   scenarios/x.yaml:12: cluster.nic.bandwidth: expected a positive bandwidth, got '-5 Gb/s'
// The CLI prints that one line and exits with code 2.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tagcsim {

// A mistake in the user's input. The message is complete and printable as is.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit code for bad input, shared by every command.
inline constexpr int kExitBadInput = 2;

// A YAML node that remembers where it came from, so that every complaint about
// it can say "file:line: key.path: ...". Reading a map goes through
// expect_keys(), which rejects unknown (e.g. misspelt) keys instead of
// silently ignoring them.
class Input {
 public:
  static Input load_file(const std::string& path);
  static Input load_string(const std::string& text, const std::string& source_name);
  // A tree built or edited in code (sweeps); nodes keep the marks they were parsed with.
  static Input wrap(YAML::Node node, const std::string& source_name);

  // --- structure ---
  bool is_map() const;
  bool is_sequence() const;
  bool is_scalar() const;
  bool is_null() const;
  // Fails unless this is a map whose keys are all in `allowed`. A near miss
  // gets a "did you mean" hint.
  const Input& expect_keys(std::initializer_list<std::string_view> allowed) const;
  const Input& expect_keys(const std::vector<std::string>& allowed) const;
  bool has(std::string_view key) const;
  Input operator[](std::string_view key) const;  // required: fails if missing
  std::optional<Input> find(std::string_view key) const;
  std::size_t size() const;                       // sequence length (fails if not a sequence)
  Input at(std::size_t i) const;                  // sequence element
  std::vector<std::string> keys() const;          // map keys in file order

  // --- scalars ---
  std::string as_string() const;
  bool as_bool() const;
  double as_double() const;
  std::int64_t as_int() const;
  // Integers and doubles with range checks; the message says the range.
  std::int64_t as_int_at_least(std::int64_t min) const;
  int as_int_between(int min, int max) const;  // inclusive; fits an int
  double as_positive() const;             // > 0
  double as_non_negative() const;         // >= 0
  double as_fraction() const;             // [0, 1]
  // Quantities with units. A bare number is taken in the base unit (given).
  double as_bandwidth() const;  // bytes/s; accepts "400 Gb/s", "50 GB/s", "25 Gbps", "1e9"
  double as_seconds() const;    // s; accepts "0.5 us", "1.2 ms", "3 ns", "2 s"
  double as_bytes() const;      // bytes; accepts "64 KiB", "1 GiB", "100 MB", "1e6"
  double as_flop_rate() const;  // FLOP/s; accepts "989 TFLOP/s", "312e12"
  // One of a fixed set of words.
  std::string as_choice(std::initializer_list<std::string_view> choices) const;

  // --- location ---
  const std::string& file() const { return *file_; }
  int line() const;             // 1-based; 0 when unknown
  const std::string& path() const { return path_; }  // "cluster.nic.bandwidth"
  std::string where() const;    // "file:line: path"
  [[noreturn]] void fail(const std::string& what) const;
  const YAML::Node& raw() const { return node_; }

 private:
  Input(YAML::Node node, std::shared_ptr<const std::string> file, std::string path, int parent_line);
  std::string scalar_text() const;
  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  int parent_line_ = 0;
};

// " (did you mean 'x'?)" for the closest of `choices` to `word` (a prefix of
// three letters or more, else at most two edits away), or "" when none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& choices);
// "unknown <kind> '<name>' (did you mean ...); expected one of: a, b, c".
std::string unknown_name(std::string_view kind, std::string_view name, const std::vector<std::string>& choices);

// Parsers for quantities given on the command line; `what` names the flag.
double parse_bandwidth(std::string_view text, std::string_view what);
double parse_bytes(std::string_view text, std::string_view what);
double parse_seconds(std::string_view text, std::string_view what);

}  // namespace tagcsim
