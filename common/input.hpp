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
#include <utility>
#include <vector>

namespace tagcsim {

// A mistake in the user's input. The message is complete and printable as is.
// One that is about a key of a file also keeps its parts, so that a caller
// (a sweep) can say it again from another place.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  explicit InputError(const char* message) : std::runtime_error(message) {}
  // what() is "file:line: key: problem" ("file:line: problem" without a key).
  InputError(std::string file, int line, std::string key, std::string problem);
  const std::string& file() const { return file_; }   // "" when the error is not about a file's key
  int line() const { return line_; }
  const std::string& key() const { return key_; }     // "cluster.nics.bandwidth"
  const std::string& problem() const { return problem_; }

 private:
  std::string file_, key_, problem_;
  int line_ = 0;
};

// A whole file as text; InputError "PATH: <unreadable>" when it cannot be opened.
std::string read_text_file(const std::string& path, const std::string& unreadable = "cannot open file");

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
  // Quantities with units. A bare number is refused (is `400` bytes/s or Gb/s?) with the
  // likely spelling; so is a unit typo ("400 Gbit", "400 gb/s"). Only 0 may go without a unit.
  double as_bandwidth() const;  // bytes/s; accepts "400 Gb/s", "50 GB/s", "25 Gbps", "1e9 B/s"
  double as_seconds() const;    // s; accepts "0.5 us", "1.2 ms", "3 ns", "2 s", "0"
  double as_bytes() const;      // bytes; accepts "64 KiB", "1 GiB", "100 MB", "1e6 B"
  double as_flop_rate() const;  // FLOP/s; accepts "989 TFLOP/s", "312e12 FLOP/s"
  // One of a fixed set of words.
  std::string as_choice(std::initializer_list<std::string_view> choices) const;

  // --- location ---
  const std::string& file() const { return *file_; }
  int line() const;             // 1-based; 0 when unknown
  const std::string& path() const { return path_; }  // "cluster.nic.bandwidth"
  std::string where() const;    // "file:line: path"
  // A path written in this file, as seen from it: a relative one is taken beside the file (when the
  // file is one on disk, not a string parsed in code).
  std::string beside(const std::string& name) const;
  [[noreturn]] void fail(const std::string& what) const;
  const YAML::Node& raw() const { return node_; }

 private:
  Input(YAML::Node node, std::shared_ptr<const std::string> file, std::string path, int parent_line);
  std::string scalar_text() const;
  std::string key_text(const YAML::Node& key) const;
  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  int parent_line_ = 0;
};

// Other names users type for a choice: (alias, the choice it stands for).
using Aliases = std::vector<std::pair<std::string, std::string>>;
// The choice `name` stands for: its alias's target, else `name` itself.
std::string resolve_alias(const std::string& name, const Aliases& aliases);

// " (did you mean 'x'?)" for the choice closest to `word`, or "" when none is close. In order:
// an alias; a choice that `word` starts (3 letters or more); a choice (or alias) containing
// `word`; a choice containing every part of `word` ("llama3-8b" -> "llama3.1-8b"); at most two
// edits away.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& choices,
                         const Aliases& aliases = {});
// "unknown <kind> '<name>' (did you mean ...); expected one of: a, b, c".
std::string unknown_name(std::string_view kind, std::string_view name, const std::vector<std::string>& choices,
                         const Aliases& aliases = {});

// Parsers for quantities given on the command line; `what` names the flag. A bare number is
// refused, as in YAML, except by parse_bytes, whose flags (--bytes, --sizes) say their unit.
double parse_bandwidth(std::string_view text, std::string_view what);
double parse_bytes(std::string_view text, std::string_view what);
double parse_seconds(std::string_view text, std::string_view what);

// Quantities written back as text that the parsers above read back as exactly `value`: in
// `unit` when that is exact ("400 Gb/s"), else in the base unit ("5.0000000001e+10 B/s").
enum class Quantity { Bandwidth, Time, Bytes, FlopRate };
std::string format_quantity(double value, Quantity q, std::string_view unit);

}  // namespace tagcsim
