// Quantities with units: reading them (with the likely spelling when a unit is missing or
// misspelt) and writing them back exactly.
#include "common/text.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <span>

namespace tagcsim {
namespace detail {
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

}  // namespace

QuantityReading read_quantity_text(std::string_view text, Quantity q, std::string_view key, bool allow_zero,
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

}  // namespace detail

using detail::QuantityReading;
using detail::read_quantity_text;

std::string format_quantity(double value, Quantity q, std::string_view unit) {
  const detail::Kind k = detail::kind_of(q);
  auto exact = [&](const std::string& text) {
    const auto r = read_quantity_text(text, q, "", true, false);
    return r.error.empty() && r.value == value;
  };
  if (auto scale = detail::scale_of(k.units, unit)) {
    const double v = value / *scale;
    for (const char* f : {"{} {}", "{:.15g} {}", "{:.16g} {}", "{:.17g} {}"}) {
      std::string text = fmt::format(fmt::runtime(f), v, unit);
      if (exact(text)) return text;
    }
  }
  return fmt::format("{} {}", value, detail::base_unit(q));  // the shortest text that reads back exactly
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
