#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <span>
#include <sstream>

namespace tagcsim {
namespace {

struct UnitScale {
  std::string_view name;
  double scale;
};

constexpr UnitScale kBandwidthUnits[] = {
    {"B/s", 1},         {"KB/s", 1e3},       {"MB/s", 1e6},        {"GB/s", 1e9},     {"TB/s", 1e12},
    {"KiB/s", 1024.0},  {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
    {"MBps", 1e6},      {"GBps", 1e9},       {"TBps", 1e12},
    {"b/s", 0.125},     {"bps", 0.125},      {"Kb/s", 125.0},      {"Kbps", 125.0},
    {"Mb/s", 1.25e5},   {"Mbps", 1.25e5},    {"Mbit/s", 1.25e5},
    {"Gb/s", 1.25e8},   {"Gbps", 1.25e8},    {"Gbit/s", 1.25e8},   {"GbE", 1.25e8},
    {"Tb/s", 1.25e11},  {"Tbps", 1.25e11},   {"Tbit/s", 1.25e11},
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

struct Kind {
  std::span<const UnitScale> units;
  std::string_view what;     // "bandwidth"
  std::string_view example;  // "400 Gb/s"
};
Kind kind_of(Quantity q) {
  switch (q) {
    case Quantity::Bandwidth: return {kBandwidthUnits, "bandwidth", "400 Gb/s"};
    case Quantity::Time: return {kTimeUnits, "time", "0.5 us"};
    case Quantity::Bytes: return {kByteUnits, "size", "80 GiB"};
    case Quantity::FlopRate: return {kFlopUnits, "FLOP rate", "989 TFLOP/s"};
  }
  return {kTimeUnits, "time", "0.5 us"};
}

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

// "400 Gb/s" -> (400, "Gb/s"); "fast" -> (nullopt, "fast"); "400" -> (400, "").
struct Split {
  std::optional<double> number;
  std::string unit;
};
Split split_quantity(std::string_view text) {
  const std::string s(trim(text));
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(v)) return {std::nullopt, s};
  return {v, std::string(trim(std::string_view(end)))};
}

std::optional<double> scale_of(std::span<const UnitScale> units, std::string_view unit) {
  for (const auto& u : units)
    if (u.name == unit) return u.scale;
  return std::nullopt;
}

std::string unit_list(std::span<const UnitScale> units) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
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
std::string join(const Range& r, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : r) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// The units a mistyped one probably meant: the same letters in another case ("gb/s": Gb/s or
// GB/s), the rate of a size ("Gbit": Gbit/s), or a near miss.
std::vector<std::string> units_meant(std::span<const UnitScale> units, std::string_view unit) {
  std::vector<std::string> out;
  const std::string u = lower(unit);
  for (const auto& c : units)
    if (lower(c.name) == u || lower(c.name) == u + "/s") out.emplace_back(c.name);
  if (!out.empty()) return out;
  std::size_t best = 3;
  for (const auto& c : units) {
    const std::size_t d = edit_distance(u, lower(c.name));
    if (d < best) best = d, out = {std::string(c.name)};
  }
  return out;
}

std::string number_text(double v) { return fmt::format("{}", v); }

// A bare number's likely meaning. Large numbers are in the base unit already (1e9 bytes/s);
// small ones were written in the unit people use for that key (400: NIC Gb/s, 450: NVLink GB/s).
std::string bare_suggestion(double v, Quantity q, std::string_view key) {
  auto in = [&](double scale, std::string_view unit) { return fmt::format("{:.6g} {}", v / scale, unit); };
  switch (q) {
    case Quantity::Bandwidth:
      if (v >= 1e9) return in(1e9, "GB/s");
      if (v >= 1e6) return in(1e6, "MB/s");
      return in(1, key.find("nic") != std::string_view::npos ? "Gb/s" : "GB/s");
    case Quantity::Time:
      if (v < 1e-6) return in(1e-9, "ns");
      if (v < 1e-3) return in(1e-6, "us");
      return in(1, "us");
    case Quantity::Bytes:
      if (v >= 1e9) return std::fmod(v, 1073741824.0) == 0 ? in(1073741824.0, "GiB") : in(1e9, "GB");
      if (v >= 1e6) return in(1e6, "MB");
      return in(1, "GiB");
    case Quantity::FlopRate:
      if (v >= 1e9) return in(1e12, "TFLOP/s");
      return in(1, "TFLOP/s");
  }
  return "";
}

std::string_view base_unit(Quantity q) { return kind_of(q).units.front().name; }

// Reads one quantity. Returns the value, or the complaint (without its location).
struct Reading {
  double value = 0;
  std::string error;
};
Reading read_quantity_text(std::string_view text, Quantity q, std::string_view key, bool allow_zero,
                           bool allow_bare) {
  const Kind k = kind_of(q);
  const auto [number, unit] = split_quantity(text);
  const std::string units = fmt::format("units: {}", unit_list(k.units));
  const std::string bits = q == Quantity::Bandwidth ? " b is bits, B is bytes" : "";
  if (!number)
    return {0, fmt::format("expected a {} such as '{}', got '{}'; {}", k.what, k.example, text, units)};
  double v = *number;
  if (unit.empty()) {
    if (!(v == 0 || allow_bare))
      return {0, fmt::format("expected a {} with a unit, got '{}' (did you mean '{}'? a bare number would be {} {}); {}",
                             k.what, text, bare_suggestion(v, q, key), number_text(v), base_unit(q), units)};
  } else if (auto scale = scale_of(k.units, unit)) {
    v *= *scale;
  } else {
    std::vector<std::string> meant;
    for (const auto& m : units_meant(k.units, unit)) meant.push_back(fmt::format("'{} {}'", number_text(*number), m));
    const std::string hint = meant.empty() ? "" : fmt::format(" (did you mean {}?{})", join(meant, " or "), bits);
    return {0, fmt::format("expected a {}, got '{}': unknown unit '{}'{}; {}", k.what, text, unit, hint, units)};
  }
  if (v < 0 || (!allow_zero && v == 0))
    return {0, fmt::format("expected a {} {}, got '{}'", allow_zero ? "non-negative" : "positive", k.what, text)};
  return {v, ""};
}

// Plain-language advice for a YAML syntax error reported at `line` (1-based).
std::string yaml_hint(const std::string& text, int& line, const std::string& msg) {
  std::stringstream ss(text);
  int n = 0;
  for (std::string l; std::getline(ss, l);) {
    ++n;
    const auto indent = l.find_first_not_of(" \t");
    if (l.substr(0, indent == std::string::npos ? l.size() : indent).find('\t') != std::string::npos) {
      line = n;
      return "this line is indented with a tab; YAML indents with spaces only";
    }
    if (n >= line) break;
  }
  if (msg.find("flow") != std::string::npos || msg.find("unmatched") != std::string::npos ||
      msg.find("end of sequence") != std::string::npos)
    return "a '{' or '[' is not closed, or a ',' is missing between its items";
  if (msg.find("end of map not found") != std::string::npos)
    return "this key is indented less than the keys above it but more than their parent; the keys of one "
           "map start in the same column";
  if (msg.find("illegal map value") != std::string::npos)
    return "this key is indented more than the keys above it (the keys of one map start in the same column), "
           "or a value contains ': ' and needs quotes";
  if (msg.find("escape") != std::string::npos) return "a backslash in double quotes starts an escape; use single quotes";
  return "check the indentation (spaces, the keys of one map in one column) and the quoting on this line";
}

}  // namespace

InputError::InputError(std::string file, int line, std::string key, std::string problem)
    : std::runtime_error(key.empty() ? fmt::format("{}:{}: {}", file, line, problem)
                                     : fmt::format("{}:{}: {}: {}", file, line, key, problem)),
      file_(std::move(file)),
      key_(std::move(key)),
      problem_(std::move(problem)),
      line_(line) {}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& choices, const Aliases& aliases) {
  auto say = [](std::string_view c) { return fmt::format(" (did you mean '{}'?)", c); };
  const std::string w = lower(word);
  for (const auto& [alias, target] : aliases)
    if (lower(alias) == w) return say(target);
  if (w.size() >= 3) {
    for (const auto& c : choices)
      if (c.size() > w.size() && lower(c).compare(0, w.size(), w) == 0) return say(c);
    // The shortest choice that contains the word ("p4de": aws-p4de), or whose alias does.
    std::string best;
    for (const auto& c : choices)
      if (lower(c).find(w) != std::string::npos && (best.empty() || c.size() < best.size())) best = c;
    for (const auto& [alias, target] : aliases)
      if (best.empty() && lower(alias).find(w) != std::string::npos) best = target;
    if (!best.empty()) return say(best);
    // Every part of the word in one choice: "llama3-8b" -> "llama3.1-8b", "h100-dgx" -> "dgx-h100-ib400".
    std::vector<std::string> parts;
    std::string part;
    for (char ch : w + "-") {
      if (ch == '-' || ch == '_' || ch == '.' || ch == ' ') {
        if (!part.empty()) parts.push_back(part);
        part.clear();
      } else {
        part += ch;
      }
    }
    if (parts.size() >= 2)
      for (const auto& c : choices) {
        const std::string lc = lower(c);
        if (std::all_of(parts.begin(), parts.end(), [&](const std::string& p) { return lc.find(p) != std::string::npos; }))
          return say(c);
      }
  }
  std::string best;
  std::size_t best_d = 3;  // near misses only
  for (const auto& c : choices) {
    const std::size_t d = edit_distance(w, lower(c));
    if (d < best_d) best_d = d, best = c;
  }
  return best.empty() ? "" : say(best);
}

std::string unknown_name(std::string_view kind, std::string_view name, const std::vector<std::string>& choices,
                         const Aliases& aliases) {
  return fmt::format("unknown {} '{}'{}; expected one of: {}", kind, name, did_you_mean(name, choices, aliases),
                     join(choices));
}

std::string format_quantity(double value, Quantity q, std::string_view unit) {
  const Kind k = kind_of(q);
  auto exact = [&](const std::string& text) {
    const auto r = read_quantity_text(text, q, "", true, false);
    return r.error.empty() && r.value == value;
  };
  if (auto scale = scale_of(k.units, unit)) {
    const double v = value / *scale;
    for (const char* f : {"{} {}", "{:.15g} {}", "{:.16g} {}", "{:.17g} {}"}) {
      std::string text = fmt::format(fmt::runtime(f), v, unit);
      if (exact(text)) return text;
    }
  }
  return fmt::format("{} {}", value, base_unit(q));  // the shortest text that reads back exactly
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
    int line = e.mark.line + 1;
    const std::string hint = yaml_hint(text, line, e.msg);
    throw InputError(source_name, line, "", fmt::format("not valid YAML ({}): {}", e.msg, hint));
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
  if (m.line >= 0) return m.line + 1;
  // A map built in code (a sweep turning `cluster: name` into {preset: name, nodes: 4}):
  // where its first element came from, if that is in the file.
  if (node_.IsMap())
    for (const auto& kv : node_)
      if (kv.second.Mark().line >= 0) return kv.second.Mark().line + 1;
  return parent_line_;
}

std::string Input::where() const {
  return path_.empty() ? fmt::format("{}:{}", *file_, line())
                       : fmt::format("{}:{}: {}", *file_, line(), path_);
}

void Input::fail(const std::string& what) const { throw InputError(*file_, line(), path_, what); }

// A map's key as text; a list or a map standing as a key (`- {a: 1} :`) is refused where it is.
std::string Input::key_text(const YAML::Node& key) const {
  if (key.IsScalar()) return key.Scalar();
  const int at = key.Mark().line >= 0 ? key.Mark().line + 1 : line();
  throw InputError(*file_, at, path_,
                   "a key must be a single word, not a list or a map (is a ':' misplaced, or a value missing quotes?)");
}

const Input& Input::expect_keys(std::initializer_list<std::string_view> allowed) const {
  return expect_keys(std::vector<std::string>(allowed.begin(), allowed.end()));
}

const Input& Input::expect_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail(fmt::format("expected a map with keys from: {}", join(allowed)));
  for (const auto& kv : node_) {
    auto key = key_text(kv.first);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string p = path_.empty() ? key : path_ + "." + key;
      // A key added by a sweep has no place in the file; then the map's own line stands in.
      const int at = kv.first.Mark().line >= 0 ? kv.first.Mark().line + 1 : line();
      throw InputError(*file_, at, p, fmt::format("unknown key{}; expected one of: {}", did_you_mean(key, allowed),
                                                  join(allowed)));
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
  for (const auto& kv : node_) out.push_back(key_text(kv.first));
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
double read_quantity(const Input& in, const std::string& text, Quantity q, bool allow_zero) {
  const auto r = read_quantity_text(text, q, in.path(), allow_zero, false);
  if (!r.error.empty()) in.fail(r.error);
  return r.value;
}
}  // namespace

double Input::as_bandwidth() const { return read_quantity(*this, scalar_text(), Quantity::Bandwidth, false); }
double Input::as_seconds() const { return read_quantity(*this, scalar_text(), Quantity::Time, true); }
double Input::as_bytes() const { return read_quantity(*this, scalar_text(), Quantity::Bytes, false); }
double Input::as_flop_rate() const { return read_quantity(*this, scalar_text(), Quantity::FlopRate, false); }

std::string Input::as_choice(std::initializer_list<std::string_view> choices) const {
  auto s = scalar_text();
  for (auto c : choices)
    if (s == c) return s;
  fail(fmt::format("expected one of: {}; got '{}'{}", join(choices), s,
                   did_you_mean(s, std::vector<std::string>(choices.begin(), choices.end()))));
}

namespace {
double parse_flag(std::string_view text, std::string_view what, Quantity q, bool allow_bare) {
  const auto r = read_quantity_text(text, q, what, false, allow_bare);
  if (!r.error.empty()) throw InputError(fmt::format("{}: {}", what, r.error));
  return r.value;
}
}  // namespace

double parse_bandwidth(std::string_view text, std::string_view what) {
  return parse_flag(text, what, Quantity::Bandwidth, false);
}
double parse_bytes(std::string_view text, std::string_view what) { return parse_flag(text, what, Quantity::Bytes, true); }
double parse_seconds(std::string_view text, std::string_view what) {
  return parse_flag(text, what, Quantity::Time, false);
}

}  // namespace tagcsim
