#include "common/input.hpp"

#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

namespace tagcsim {
namespace {

using detail::edit_distance;
using detail::join;
using detail::lower;
using detail::trim;

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

std::string resolve_alias(const std::string& name, const Aliases& aliases) {
  for (const auto& [alias, target] : aliases)
    if (alias == name) return target;
  return name;
}

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

Input::Input(YAML::Node node, std::shared_ptr<const std::string> file, std::string path,
             int parent_line)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), parent_line_(parent_line) {}

std::string read_text_file(const std::string& path, const std::string& unreadable) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: {}", path, unreadable));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Input Input::load_file(const std::string& path) { return load_string(read_text_file(path), path); }

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

std::string Input::beside(const std::string& name) const {
  std::filesystem::path path(name);
  if (path.is_relative() && std::filesystem::exists(file())) path = std::filesystem::path(file()).parent_path() / path;
  return path.string();
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
  const auto r = detail::read_quantity_text(text, q, in.path(), allow_zero, false);
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

}  // namespace tagcsim
