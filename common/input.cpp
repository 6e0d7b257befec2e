#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tagcsim {
namespace {

struct UnitScale {
  std::string_view name;
  double scale;
};

constexpr UnitScale kBandwidthUnits[] = {
    {"B/s", 1},        {"KB/s", 1e3},       {"MB/s", 1e6},       {"GB/s", 1e9},
    {"TB/s", 1e12},    {"KiB/s", 1024.0},   {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
    {"b/s", 0.125},    {"bps", 0.125},      {"Kb/s", 125.0},     {"Kbps", 125.0},
    {"Mb/s", 1.25e5},  {"Mbps", 1.25e5},    {"Gb/s", 1.25e8},    {"Gbps", 1.25e8},
    {"Gbit/s", 1.25e8}, {"GbE", 1.25e8},    {"Tb/s", 1.25e11},   {"Tbps", 1.25e11},
};
constexpr UnitScale kTimeUnits[] = {
    {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}, {"ns", 1e-9},
};
constexpr UnitScale kByteUnits[] = {
    {"B", 1},          {"KB", 1e3},          {"MB", 1e6},           {"GB", 1e9},
    {"TB", 1e12},      {"KiB", 1024.0},      {"MiB", 1048576.0},    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
};
constexpr UnitScale kFlopUnits[] = {
    {"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
    {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::string copy(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "400 Gb/s" -> 5e10 with the table's scale. A bare number means scale 1.
template <std::size_t N>
std::optional<double> parse_quantity(std::string_view text, const UnitScale (&units)[N]) {
  text = trim(text);
  if (auto v = parse_number(text)) return v;
  for (const auto& u : units) {
    if (text.size() > u.name.size() && text.substr(text.size() - u.name.size()) == u.name) {
      if (auto v = parse_number(text.substr(0, text.size() - u.name.size()))) return *v * u.scale;
    }
  }
  return std::nullopt;
}

template <std::size_t N>
std::string unit_list(const UnitScale (&units)[N]) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

template <class Range>
std::string join(const Range& r) {
  std::string out;
  for (const auto& s : r) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

}  // namespace

std::string did_you_mean(std::string_view word, const std::vector<std::string>& choices) {
  if (word.size() >= 3)
    for (const auto& c : choices)
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) return fmt::format(" (did you mean '{}'?)", c);
  std::string best;
  std::size_t best_d = 3;  // near misses only
  for (const auto& c : choices) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

std::string unknown_name(std::string_view kind, std::string_view name, const std::vector<std::string>& choices) {
  return fmt::format("unknown {} '{}'{}; expected one of: {}", kind, name, did_you_mean(name, choices), join(choices));
}

Input::Input(YAML::Node node, std::shared_ptr<const std::string> file, std::string path,
             int parent_line)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), parent_line_(parent_line) {}

Input Input::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return load_string(ss.str(), path);
}

Input Input::load_string(const std::string& text, const std::string& source_name) {
  auto file = std::make_shared<const std::string>(source_name);
  try {
    return Input(YAML::Load(text), file, "", 1);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}: not valid YAML: {}", source_name, e.mark.line + 1, e.msg));
  }
}

Input Input::wrap(YAML::Node node, const std::string& source_name) {
  return Input(std::move(node), std::make_shared<const std::string>(source_name), "", 1);
}

bool Input::is_map() const { return node_.IsMap(); }
bool Input::is_sequence() const { return node_.IsSequence(); }
bool Input::is_scalar() const { return node_.IsScalar(); }
bool Input::is_null() const { return !node_.IsDefined() || node_.IsNull(); }

int Input::line() const {
  auto m = node_.Mark();
  return m.line >= 0 ? m.line + 1 : parent_line_;
}

std::string Input::where() const {
  return path_.empty() ? fmt::format("{}:{}", *file_, line())
                       : fmt::format("{}:{}: {}", *file_, line(), path_);
}

void Input::fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", where(), what)); }

const Input& Input::expect_keys(std::initializer_list<std::string_view> allowed) const {
  return expect_keys(std::vector<std::string>(allowed.begin(), allowed.end()));
}

const Input& Input::expect_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail(fmt::format("expected a map with keys from: {}", join(allowed)));
  for (const auto& kv : node_) {
    auto key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string p = path_.empty() ? key : path_ + "." + key;
      // A key added by a sweep has no place in the file; then the map's own line stands in.
      const int at = kv.first.Mark().line >= 0 ? kv.first.Mark().line + 1 : line();
      throw InputError(fmt::format("{}:{}: {}: unknown key{}; expected one of: {}", *file_, at, p,
                                   did_you_mean(key, allowed), join(allowed)));
    }
  }
  return *this;
}

bool Input::has(std::string_view key) const { return node_.IsMap() && node_[std::string(key)]; }

std::optional<Input> Input::find(std::string_view key) const {
  if (!node_.IsMap()) fail("expected a map");
  std::string k(key);
  YAML::Node child = node_[k];
  if (!child) return std::nullopt;
  return Input(child, file_, path_.empty() ? k : path_ + "." + k, line());
}

Input Input::operator[](std::string_view key) const {
  auto v = find(key);
  if (!v) fail(fmt::format("missing required key '{}'", key));
  return *v;
}

std::size_t Input::size() const {
  if (!node_.IsSequence()) fail("expected a list");
  return node_.size();
}

Input Input::at(std::size_t i) const {
  if (!node_.IsSequence() || i >= node_.size()) fail(fmt::format("no list element {}", i));
  return Input(node_[i], file_, fmt::format("{}[{}]", path_, i), line());
}

std::vector<std::string> Input::keys() const {
  if (!node_.IsMap()) fail("expected a map");
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

std::string Input::scalar_text() const {
  if (!node_.IsScalar()) fail("expected a single value, got a list or a map");
  return node_.Scalar();
}

std::string Input::as_string() const { return scalar_text(); }

bool Input::as_bool() const {
  auto s = scalar_text();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(fmt::format("expected true or false, got '{}'", s));
}

double Input::as_double() const {
  auto s = scalar_text();
  auto v = parse_number(s);
  if (!v) fail(fmt::format("expected a number, got '{}'", s));
  return *v;
}

std::int64_t Input::as_int() const {
  auto s = std::string(trim(scalar_text()));
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) fail(fmt::format("expected an integer, got '{}'", s));
  return v;
}

std::int64_t Input::as_int_at_least(std::int64_t min) const {
  auto v = as_int();
  if (v < min) fail(fmt::format("expected an integer >= {}, got {}", min, v));
  return v;
}

int Input::as_int_between(int min, int max) const {
  const auto v = as_int();
  if (v < min) fail(fmt::format("expected an integer >= {}, got {}", min, v));
  if (v > max) fail(fmt::format("expected an integer <= {}, got {}", max, v));
  return int(v);
}

double Input::as_positive() const {
  double v = as_double();
  if (!(v > 0)) fail(fmt::format("expected a positive number, got {}", scalar_text()));
  return v;
}

double Input::as_non_negative() const {
  double v = as_double();
  if (v < 0) fail(fmt::format("expected a number >= 0, got {}", scalar_text()));
  return v;
}

double Input::as_fraction() const {
  double v = as_double();
  if (v < 0 || v > 1) fail(fmt::format("expected a fraction in [0, 1], got {}", scalar_text()));
  return v;
}

namespace {
template <std::size_t N>
double read_quantity(const Input& in, const std::string& text, const UnitScale (&units)[N],
                     std::string_view what, bool allow_zero) {
  auto v = parse_quantity(text, units);
  if (!v) in.fail(fmt::format("expected a {} (a number, or a number with one of: {}), got '{}'", what,
                              unit_list(units), text));
  if (*v < 0 || (!allow_zero && *v == 0))
    in.fail(fmt::format("expected a {} {}, got '{}'", allow_zero ? "non-negative" : "positive", what, text));
  return *v;
}
}  // namespace

double Input::as_bandwidth() const { return read_quantity(*this, scalar_text(), kBandwidthUnits, "bandwidth", false); }
double Input::as_seconds() const { return read_quantity(*this, scalar_text(), kTimeUnits, "time", true); }
double Input::as_bytes() const { return read_quantity(*this, scalar_text(), kByteUnits, "size in bytes", false); }
double Input::as_flop_rate() const { return read_quantity(*this, scalar_text(), kFlopUnits, "FLOP rate", false); }

std::string Input::as_choice(std::initializer_list<std::string_view> choices) const {
  auto s = scalar_text();
  for (auto c : choices)
    if (s == c) return s;
  fail(fmt::format("expected one of: {}; got '{}'{}", join(choices), s,
                   did_you_mean(s, std::vector<std::string>(choices.begin(), choices.end()))));
}

namespace {
template <std::size_t N>
double parse_flag(std::string_view text, std::string_view what, const UnitScale (&units)[N],
                  std::string_view kind) {
  auto v = parse_quantity(text, units);
  if (!v || *v <= 0)
    throw InputError(fmt::format("{}: expected a positive {} (a number, or with one of: {}), got '{}'", what,
                                 kind, unit_list(units), text));
  return *v;
}
}  // namespace

double parse_bandwidth(std::string_view text, std::string_view what) {
  return parse_flag(text, what, kBandwidthUnits, "bandwidth");
}
double parse_bytes(std::string_view text, std::string_view what) {
  return parse_flag(text, what, kByteUnits, "size in bytes");
}
double parse_seconds(std::string_view text, std::string_view what) {
  return parse_flag(text, what, kTimeUnits, "time");
}

}  // namespace tagcsim
