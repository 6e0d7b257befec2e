#include "common/yaml_writer.hpp"

#include "common/json.hpp"

#include <fmt/format.h>

#include <cctype>

namespace tagcsim {

std::string yaml_scalar(const std::string& s) {
  static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
  bool plain = !s.empty() && std::isalnum(static_cast<unsigned char>(s.front()));
  for (char c : s)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/');
  std::string lower = s;
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : kWords) plain = plain && lower != w;
  plain = plain && !(std::isdigit(static_cast<unsigned char>(s.front())) && s.find_first_not_of("0123456789.e+-") == std::string::npos);
  return plain ? s : json_string(s);  // a JSON string is a YAML double-quoted scalar
}

std::string yaml_flag(bool b) { return b ? "true" : "false"; }
std::string yaml_number(double v) { return fmt::format("{}", v); }

std::string yaml_quantity(double v, Quantity q, std::initializer_list<std::string_view> units) {
  for (auto u : units) {
    const std::string text = format_quantity(v, q, u);
    const auto space = text.rfind(' ');
    if (text.substr(space + 1) == u && space <= 8) return text;
  }
  return format_quantity(v, q, *units.begin());
}

std::string yaml_seconds(double s) { return yaml_quantity(s, Quantity::Time, {"us", "ns", "ms", "s"}); }

void YamlMap::put(std::string_view key, const std::string& value, std::string_view comment) {
  std::string line = fmt::format("{:{}}{}: {}", "", indent_, key, value);
  if (!comment.empty()) line = fmt::format("{:<44}# {}", line + "  ", comment);
  out_ += line + "\n";
}

YamlMap YamlMap::open(std::string_view key, std::string_view comment) {
  out_ += comment.empty() ? fmt::format("{:{}}{}:\n", "", indent_, key)
                          : fmt::format("{:<44}# {}\n", fmt::format("{:{}}{}:  ", "", indent_, key), comment);
  return YamlMap(out_, indent_ + 2);
}

}  // namespace tagcsim
