// Kernel profiles: the bandwidth model, measured-point interpolation, and
// the bench JSON reader.
#include "kernels/profile.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tagcsim::kernels {
namespace {
constexpr double kDensity = 0.36, kRatio = 2.0, kPeeledFraction = 0.5;
}

StageCost stage_cost(Stage s, IndexEncoding enc) {
  const double ib = index_bytes_per_element(enc);
  switch (s) {
    case Stage::SparsifyBisect: return {24.0 + 4.0 * kBisectProbes, 2 + 2 * kBisectProbes, kBisectProbes};
    case Stage::SparsifyTopk: return {36.0, 10, 0};
    case Stage::IndexCreate: return {4.0 + ib, 1, 0};
    case Stage::IndexRead: return {8.0 + ib, 1, 0};
    case Stage::Compress:
    case Stage::CompressBatched: return {4.0 + 24.0 * kDensity + 4.0 / kRatio, 2, 0};
    case Stage::DecodeRound: return {22.0 + 53.0 * kPeeledFraction, 3, 1};
    case Stage::Estimate: return {1.0 + 16.0 * kDensity, 1, 0};
  }
  return {};
}

KernelProfile bandwidth_model(const std::string& device, double memory_bandwidth, double efficiency) {
  if (!(memory_bandwidth > 0)) throw InputError(fmt::format("bandwidth model: memory bandwidth must be positive, got {}", memory_bandwidth));
  if (!(efficiency > 0 && efficiency <= 1))
    throw InputError(fmt::format("bandwidth model: efficiency must be in (0, 1], got {}", efficiency));
  KernelProfile p;
  p.device = device;
  p.backend = "model";
  p.memory_bandwidth = memory_bandwidth;
  p.efficiency = efficiency;
  p.source = fmt::format(
      "bandwidth model: stage bytes/element (kernels/profile.hpp) at {:.0f}% of {:.3g} GB/s, {:.0f} us per launch, "
      "{:.0f} us per host sync",
      efficiency * 100, memory_bandwidth / 1e9, p.launch_latency * 1e6, p.host_sync_latency * 1e6);
  return p;
}

double KernelProfile::model_seconds(Stage s, double elements, IndexEncoding enc) const {
  const StageCost c = stage_cost(s, enc);
  const double bw = memory_bandwidth * efficiency;
  const double stream = bw > 0 ? elements * c.bytes_per_element / bw : 0.0;
  return stream + c.launches * launch_latency + c.host_syncs * host_sync_latency;
}

const KernelProfile::Series* KernelProfile::find(Stage s, IndexEncoding enc) const {
  // Both 1-bit encodings run the same index kernels.
  if (enc == IndexEncoding::Bit1Sum) enc = IndexEncoding::Bit1Or;
  for (const auto& ser : series) {
    if (ser.stage != s || ser.points.empty()) continue;
    if (!stage_uses_encoding(s)) return &ser;
    auto e = ser.encoding.value_or(IndexEncoding::Bit1Or);
    if (e == IndexEncoding::Bit1Sum) e = IndexEncoding::Bit1Or;
    if (e == enc) return &ser;
  }
  return nullptr;
}

double KernelProfile::seconds(Stage s, double elements, IndexEncoding enc) const {
  const Series* ser = find(s, enc);
  if (!ser) return model_seconds(s, elements, enc);
  const auto& p = ser->points;
  if (elements <= p.front().elements) return p.front().seconds;
  if (elements >= p.back().elements) return p.back().seconds * elements / p.back().elements;
  auto hi = std::upper_bound(p.begin(), p.end(), elements, [](double e, const Point& q) { return e < q.elements; });
  auto lo = hi - 1;
  const double f = std::log(elements / lo->elements) / std::log(hi->elements / lo->elements);
  return std::exp(std::log(lo->seconds) + f * (std::log(hi->seconds) - std::log(lo->seconds)));
}

KernelProfile load_profile(const std::string& path) {
  Input root = Input::load_file(path);
  root.expect_keys({"format", "device", "backend", "source", "command", "date", "memory_bandwidth",
                    "memory_bandwidth_basis", "measured_copy_bandwidth", "operating_point", "stages"});
  if (root["format"].as_string() != "tagcsim-kernel-profile/1")
    root["format"].fail("expected 'tagcsim-kernel-profile/1' (a file written by `tagcsim kernels bench`)");
  KernelProfile p;
  p.device = root["device"].as_string();
  p.backend = root["backend"].as_string();
  p.source = root["source"].as_string();
  p.memory_bandwidth = root["memory_bandwidth"].as_positive();
  Input stages = root["stages"];
  for (std::size_t i = 0; i < stages.size(); ++i) {
    Input st = stages.at(i);
    st.expect_keys({"stage", "encoding", "bytes_per_element", "host_syncs", "points"});
    KernelProfile::Series ser;
    ser.stage = parse_stage(st["stage"].as_string(), st["stage"].where());
    if (auto e = st.find("encoding"); e && !e->is_null()) ser.encoding = parse_index_encoding(*e);
    Input pts = st["points"];
    for (std::size_t j = 0; j < pts.size(); ++j) {
      Input pt = pts.at(j);
      pt.expect_keys({"elements", "bytes", "seconds", "seconds_min", "runs", "gbps", "bandwidth_fraction"});
      KernelProfile::Point q{pt["elements"].as_positive(), pt["seconds"].as_positive()};
      if (!ser.points.empty() && q.elements <= ser.points.back().elements)
        pt["elements"].fail("points must be in increasing order of elements");
      ser.points.push_back(q);
    }
    p.series.push_back(std::move(ser));
  }
  return p;
}

std::string data_dir() {
  if (const char* env = std::getenv("TAGCSIM_DATA_DIR"); env && *env) return env;
  return std::string(TAGCSIM_SOURCE_DIR) + "/calibrate/profiles";
}

}  // namespace tagcsim::kernels
