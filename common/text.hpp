// Small text helpers shared by common/'s sources (not part of its public face).
#pragma once

#include "common/input.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace tagcsim::detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
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
inline std::string join(const Range& r, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : r) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// One quantity read from text: the value, or the complaint (without its location). `key` names
// what is read (a key path or a flag), for the unit a bare number probably meant.
struct QuantityReading {
  double value = 0;
  std::string error;
};
QuantityReading read_quantity_text(std::string_view text, Quantity q, std::string_view key, bool allow_zero,
                                   bool allow_bare);

}  // namespace tagcsim::detail
