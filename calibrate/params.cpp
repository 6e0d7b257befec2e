// The fitted parameters: their keys, scopes, values in a cluster, ranges and priors.
#include "calibrate/fit.hpp"
#include "calibrate/param_ranges.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

namespace tagcsim::calibrate {
namespace {
constexpr double us = 1e-6;
}  // namespace

bool is_latency(Param p) {
  return p == Param::LaunchLatency || p == Param::HostLaunch || p == Param::HostLaunchPerChannel ||
         p == Param::NvlsChunkOverhead || p == Param::TransportOverhead ||
         p == Param::TransportLatency;
}
bool is_efficiency(Param p) {
  return p == Param::IntraEfficiency || p == Param::NvlsEfficiency || p == Param::NicEfficiency;
}

Range range(Param p) {
  switch (p) {
    case Param::LaunchLatency: return {10 * us, 0, 100 * us};
    case Param::HostLaunch: return {5 * us, 0, 50 * us};
    case Param::HostLaunchPerChannel: return {0.5 * us, 0, 5 * us};
    // A pipeline holds at most NCCL_STEPS (8) chunks in flight per stage: depths beyond two stages'
    // worth are not physical; a ring step waits at most a couple of chunks for its first slice.
    case Param::RingDepth: return {0.25, 0, 2};
    case Param::TreeDepth: return {1, 0, 16};
    case Param::NvlsDepth: return {2, 0, 16};
    case Param::NvlsChunkOverhead: return {1 * us, 0, 20 * us};
    case Param::IntraEfficiency:
    case Param::NvlsEfficiency:
    case Param::NicEfficiency: return {0.1, 0.3, 1.0};
    case Param::TransportLatency: return {10 * us, 0, 300 * us};
    case Param::TransportOverhead: return {1 * us, 0, 30 * us};
  }
  return {1, 0, 1};
}

// How far an efficiency may stray from its starting value before it must pay for it, when starting
// from the priors (FitOptions::prior_weight): those are measured or published rates, good to a few
// percent. Latencies and depths have no such anchor. A parameter the data determines well moves
// anyway; one only a secondary effect moves (a link that is not the bottleneck) stays near its source.
double prior_sigma(Param p) {
  switch (p) {
    case Param::IntraEfficiency:
    case Param::NvlsEfficiency: return 0.03;
    case Param::NicEfficiency: return 0.05;
    default: return 0;
  }
}

const char* param_key(Param p) {
  switch (p) {
    case Param::LaunchLatency: return "collectives.launch_latency";
    case Param::HostLaunch: return "collectives.host_launch";
    case Param::HostLaunchPerChannel: return "collectives.host_launch_per_channel";
    case Param::RingDepth: return "collectives.ring_depth";
    case Param::TreeDepth: return "collectives.tree_depth";
    case Param::NvlsDepth: return "collectives.nvls_depth";
    case Param::NvlsChunkOverhead: return "collectives.nvls_chunk_overhead";
    case Param::IntraEfficiency: return "intra_node.efficiency";
    case Param::NvlsEfficiency: return "intra_node.nvls_efficiency";
    case Param::TransportLatency: return "nics.transport.latency";
    case Param::TransportOverhead: return "nics.transport.overhead";
    case Param::NicEfficiency: return "nics.efficiency";
  }
  return "?";
}

Param parse_param(const std::string& text, const std::string& what) {
  std::string known;
  std::vector<Param> by_suffix;  // "launch_latency" is unique; "efficiency" is not
  for (int j = 0; j < kParams; ++j) {
    const std::string key = param_key(param(j));
    if (text == key) return param(j);
    if (text == key.substr(key.rfind('.') + 1)) by_suffix.push_back(param(j));
    known += (j ? ", " : "") + key;
  }
  if (by_suffix.size() == 1) return by_suffix.front();
  throw InputError(fmt::format("{}: unknown parameter '{}'; expected one of: {}", what, text, known));
}

std::string ParamId::name() const { return scope.empty() ? param_key(param) : fmt::format("{}@{}", param_key(param), scope); }

std::vector<ParamId> params_of(const topologies::Cluster& c, const Point& p) {
  std::vector<ParamId> out;
  for (auto q : {Param::LaunchLatency, Param::HostLaunch, Param::HostLaunchPerChannel, Param::RingDepth,
                 Param::TreeDepth, Param::NvlsDepth, Param::NvlsChunkOverhead})
    out.push_back({q, ""});
  const std::string intra = c.intra.name.empty() ? "custom" : c.intra.name;
  if (p.gpus_per_node > 1) {
    out.push_back({Param::IntraEfficiency, intra});
    if (c.intra.nvls_efficiency > 0) out.push_back({Param::NvlsEfficiency, intra});
  }
  if (p.nodes > 1) {
    const std::string tr = c.nics.transport.name.empty() ? "custom" : c.nics.transport.name;
    out.push_back({Param::TransportLatency, tr});
    out.push_back({Param::TransportOverhead, tr});
    out.push_back({Param::NicEfficiency, tr});
  }
  return out;
}

double get(const topologies::Cluster& c, const ParamId& id) {
  const auto& cl = c.collectives;
  switch (id.param) {
    case Param::LaunchLatency: return cl.launch_latency;
    case Param::HostLaunch: return cl.host_launch;
    case Param::HostLaunchPerChannel: return cl.host_launch_per_channel;
    case Param::RingDepth: return cl.ring_depth;
    case Param::TreeDepth: return cl.tree_depth;
    case Param::NvlsDepth: return cl.nvls_depth;
    case Param::NvlsChunkOverhead: return cl.nvls_chunk_overhead;
    case Param::IntraEfficiency: return c.intra.efficiency;
    case Param::NvlsEfficiency: return c.intra.nvls_efficiency;
    case Param::TransportLatency: return c.nics.transport.latency;
    case Param::TransportOverhead: return c.nics.transport.overhead;
    case Param::NicEfficiency: return c.nics.efficiency;
  }
  return 0;
}

void set(topologies::Cluster& c, const ParamId& id, double v) {
  auto& cl = c.collectives;
  const std::string intra = c.intra.name.empty() ? "custom" : c.intra.name;
  const std::string tr = c.nics.transport.name.empty() ? "custom" : c.nics.transport.name;
  switch (id.param) {
    case Param::LaunchLatency: cl.launch_latency = v; break;
    case Param::HostLaunch: cl.host_launch = v; break;
    case Param::HostLaunchPerChannel: cl.host_launch_per_channel = v; break;
    case Param::RingDepth: cl.ring_depth = v; break;
    case Param::TreeDepth: cl.tree_depth = v; break;
    case Param::NvlsDepth: cl.nvls_depth = v; break;
    case Param::NvlsChunkOverhead: cl.nvls_chunk_overhead = v; break;
    case Param::IntraEfficiency:
      if (id.scope == intra) c.intra.efficiency = v;
      break;
    case Param::NvlsEfficiency:
      if (id.scope == intra && c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = v;
      break;
    case Param::TransportLatency:
      if (id.scope == tr) c.nics.transport.latency = v;
      break;
    case Param::TransportOverhead:
      if (id.scope == tr) c.nics.transport.overhead = v;
      break;
    case Param::NicEfficiency:
      if (id.scope == tr) c.nics.efficiency = c.nics.transport.efficiency = v;
      break;
  }
}

std::string format_param(Param p, double value) {
  if (is_efficiency(p)) return fmt::format("{:.4f}", value);
  if (is_latency(p)) return fmt::format("{:.4g} us", value * 1e6);
  return fmt::format("{:.3f}", value);
}

const char* to_string(ParamFit::Status s) {
  switch (s) {
    case ParamFit::Status::Fitted: return "fitted";
    case ParamFit::Status::Held: return "held";
    case ParamFit::Status::AtBound: return "at bound";
  }
  return "?";
}

topologies::Cluster with_fit(topologies::Cluster c, const FitResult& r) {
  for (const auto& p : r.params) set(c, p.id, p.value);
  return c;
}

topologies::Cluster with_priors(topologies::Cluster c) {
  // NCCL's costs as NCCL models them: its latency table and nothing more, except a host launch cost.
  auto& cl = c.collectives;
  cl.latency_scale = 1;
  cl.launch_latency = 0;
  cl.host_launch = 5 * us;
  cl.host_launch_per_channel = 0;
  cl.ring_depth = cl.tree_depth = cl.nvls_depth = 0;
  cl.nvls_chunk_overhead = 0;
  if (c.intra.name == "nvlink3") c.intra.efficiency = 20.0 / 25;
  if (c.intra.name == "nvlink4") {
    c.intra.efficiency = 20.6 / 25;
    if (c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = 274.3e9 * 9 / 8 / 450e9;
  }
  if (c.nics.transport.name == "efa") {
    c.nics.transport.latency = 75 * us;
    c.nics.transport.overhead = 2 * us;
    c.nics.efficiency = c.nics.transport.efficiency = 0.90;
  }
  return c;
}

std::string prior_sources() {
  return "priors (never from the shipped tables): NCCL's latency table at scale 1 with no launch latency and no "
         "pipeline fill (tuning.cc); host launch 5 us per GPU (a CUDA kernel launch, pytorch/pytorch#41383: ~7 us "
         "per op with dispatch); NVLink ring efficiency = NCCL's own per-link rate / line rate (topo.h: 20 of 25 "
         "GB/s NVLink3, 20.6 of 25 NVLink4); NVLS efficiency 0.686 from the NCCL maintainers' 480 GB/s bus "
         "bandwidth on 8 H100 (NVIDIA/nccl-tests#212); EFA latency 75 us, what aws-ofi-nccl reports to NCCL "
         "(platform-aws.cpp), overhead 2 us, NCCL's per-step post cost on AMD hosts (tuning.cc getNetOverhead), "
         "efficiency 0.90 assumed; other transports as their profiles (none is fitted)";
}

}  // namespace tagcsim::calibrate
