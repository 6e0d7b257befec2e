// The two pieces every JSON writer here needs; the writers themselves stay
// plain fmt::format calls, so that each output reads as the JSON it makes.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace tagcsim {

// A JSON string literal, quotes included.
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A number with 9 significant digits (byte-identical across runs), or null.
inline std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "null"; }

}  // namespace tagcsim
