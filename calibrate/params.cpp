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
         p == Param::NvlsChunkOverhead || p == Param::SliceLatency || p == Param::TransportOverhead ||
         p == Param::TransportLatency || p == Param::IntraStepLatency;
}
bool is_efficiency(Param p) {
  return p == Param::IntraEfficiency || p == Param::NvlsEfficiency || p == Param::NvlsTreeEfficiency ||
         p == Param::Ll128Efficiency || p == Param::NicEfficiency;
}

bool ceiling(Param p) { return p == Param::NetChannelRate; }

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
    // A slice's handshake is a flag written over NVLink or a network completion polled by the
    // proxy: a few microseconds, never tens.
    case Param::SliceLatency: return {1 * us, 0, 20 * us};
    case Param::IntraEfficiency:
    case Param::NvlsEfficiency:
    case Param::NvlsTreeEfficiency:
    case Param::Ll128Efficiency:
    case Param::NicEfficiency: return {0.1, 0.3, 1.0};
    // NCCL's NVLink hop is 0.6-4 us by protocol; a generation's own delay adds at most a few more.
    case Param::IntraStepLatency: return {1 * us, 0, 5 * us};
    case Param::TransportLatency: return {10 * us, 0, 300 * us};
    case Param::TransportOverhead: return {1 * us, 0, 30 * us};
    // A thread block feeding a proxy: from a few GB/s to well past any one NIC's share.
    case Param::NetChannelRate: return {5e9, 5e9, 100e9};
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
    // Its prior is the tuner's view (the one-node rate), not a measurement.
    case Param::NvlsTreeEfficiency:
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
    case Param::SliceLatency: return "collectives.slice_latency";
    case Param::IntraEfficiency: return "intra_node.efficiency";
    case Param::NvlsEfficiency: return "intra_node.nvls_efficiency";
    case Param::NvlsTreeEfficiency: return "intra_node.nvls_tree_efficiency";
    case Param::Ll128Efficiency: return "intra_node.ll128_efficiency";
    case Param::IntraStepLatency: return "intra_node.step_latency";
    case Param::TransportLatency: return "nics.transport.latency";
    case Param::TransportOverhead: return "nics.transport.overhead";
    case Param::NicEfficiency: return "nics.efficiency";
    case Param::NetChannelRate: return "collectives.net_channel_rate";
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
  for (auto q : {Param::LaunchLatency, Param::RingDepth, Param::TreeDepth, Param::NvlsDepth, Param::NvlsChunkOverhead})
    out.push_back({q, ""});
  // The host's launch costs are CPU time: one pair per host CPU.
  for (auto q : {Param::HostLaunch, Param::HostLaunchPerChannel}) out.push_back({q, topologies::to_string(c.host_cpu)});
  const std::string intra = c.intra.name.empty() ? "custom" : c.intra.name;
  if (p.gpus_per_node > 1) {
    out.push_back({Param::IntraEfficiency, intra});
    if (c.intra.nvls_efficiency > 0) out.push_back({Param::NvlsEfficiency, intra});
    if (c.intra.nvls_efficiency > 0 && p.nodes > 1) out.push_back({Param::NvlsTreeEfficiency, intra});
    if (c.intra.kind != "pcie") out.push_back({Param::Ll128Efficiency, intra});
    out.push_back({Param::IntraStepLatency, intra});
    // A single-node Simple ring's slice flags: a cost of the NVLink generation's flag round trip.
    if (p.nodes == 1) out.push_back({Param::SliceLatency, intra});
  }
  if (p.nodes > 1) {
    const std::string tr = c.nics.transport.name.empty() ? "custom" : c.nics.transport.name;
    out.push_back({Param::TransportLatency, tr});
    out.push_back({Param::TransportOverhead, tr});
    out.push_back({Param::NicEfficiency, tr});
    // What a channel carries across the network: its GPU's thread block and proxy, per generation.
    out.push_back({Param::NetChannelRate, intra});
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
    case Param::SliceLatency: return cl.slice_latency;
    case Param::IntraEfficiency: return c.intra.efficiency;
    case Param::NvlsEfficiency: return c.intra.nvls_efficiency;
    case Param::NvlsTreeEfficiency: return c.intra.nvls_tree_rate_fraction();
    case Param::Ll128Efficiency: return c.intra.ll128_efficiency;
    case Param::IntraStepLatency: return c.intra.step_latency;
    case Param::TransportLatency: return c.nics.transport.latency;
    case Param::TransportOverhead: return c.nics.transport.overhead;
    case Param::NicEfficiency: return c.nics.efficiency;
    case Param::NetChannelRate: return cl.net_channel_rate;
  }
  return 0;
}

void set(topologies::Cluster& c, const ParamId& id, double v) {
  auto& cl = c.collectives;
  // Scopes as params_of names them ("custom" for an unnamed link); compared without building strings.
  auto in_scope = [&](const std::string& name) { return id.scope == (name.empty() ? std::string_view("custom") : std::string_view(name)); };
  const bool host = id.scope.empty() || id.scope == topologies::to_string(c.host_cpu);
  switch (id.param) {
    case Param::LaunchLatency: cl.launch_latency = v; break;
    case Param::HostLaunch:
      if (host) cl.host_launch = v;
      break;
    case Param::HostLaunchPerChannel:
      if (host) cl.host_launch_per_channel = v;
      break;
    case Param::RingDepth: cl.ring_depth = v; break;
    case Param::TreeDepth: cl.tree_depth = v; break;
    case Param::NvlsDepth: cl.nvls_depth = v; break;
    case Param::NvlsChunkOverhead: cl.nvls_chunk_overhead = v; break;
    case Param::SliceLatency:
      if (in_scope(c.intra.name)) cl.slice_latency = v;
      break;
    case Param::IntraEfficiency:
      if (in_scope(c.intra.name)) c.intra.efficiency = v;
      break;
    case Param::NvlsEfficiency:
      if (in_scope(c.intra.name) && c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = v;
      break;
    case Param::NvlsTreeEfficiency:
      if (in_scope(c.intra.name) && c.intra.nvls_efficiency > 0) c.intra.nvls_tree_efficiency = v;
      break;
    case Param::Ll128Efficiency:
      if (in_scope(c.intra.name)) c.intra.ll128_efficiency = v;
      break;
    case Param::IntraStepLatency:
      if (in_scope(c.intra.name)) c.intra.step_latency = v;
      break;
    case Param::TransportLatency:
      if (in_scope(c.nics.transport.name)) c.nics.transport.latency = v;
      break;
    case Param::TransportOverhead:
      if (in_scope(c.nics.transport.name)) c.nics.transport.overhead = v;
      break;
    case Param::NicEfficiency:
      if (in_scope(c.nics.transport.name)) c.nics.efficiency = c.nics.transport.efficiency = v;
      break;
    case Param::NetChannelRate:
      if (in_scope(c.intra.name)) cl.net_channel_rate = v;
      break;
  }
}

std::string format_param(Param p, double value) {
  if (is_efficiency(p)) return fmt::format("{:.4f}", value);
  if (is_latency(p)) return fmt::format("{:.4g} us", value * 1e6);
  if (p == Param::NetChannelRate) return fmt::format("{:.2f} GB/s", value / 1e9);
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

// A transport's values before any fit: what its NCCL plugin or NCCL itself states, else an assumption
// (labelled as one). Latency: the per-message cost NCCL adds per network step; overhead: the per-step
// cost beyond NCCL's default for the host CPU; efficiency: achievable / line rate.
struct TransportPrior {
  const char* kind;
  double latency, overhead, efficiency;
};
constexpr TransportPrior kTransportPriors[] = {
    // NCCL's IB verbs transport reports no latency (net_ib/init.cc); 48.5 of 50 GB/s per ConnectX-7
    // (NCCL maintainer, NVIDIA/nccl-tests#267).
    {"ib", 0, 0, 0.97},
    // The same verbs transport; IB's efficiency x RoCE/IB framing at 4096-byte MTU (derived).
    {"roce", 0, 0, 0.96},
    // aws-ofi-nccl's own cost model (src/tuner/nccl_ofi_model.cpp): 20 us per network step on P5/P5e,
    // 3 us more for Simple's completions (nccl_ofi_param.h TUNER_NET_COMP_OVERHEAD: ~2 us in the device,
    // ~1 us to the host). Not the 75 us the plugin reports to NCCL (platform-aws.cpp), which steers
    // NCCL's choice rather than measuring a message. Efficiency 0.90 assumed.
    {"efa", 20 * us, 3 * us, 0.90},
    // GPUDirect-TCPX: the plugin reports no latency (google/nccl-plugin-gpudirecttcpx net_tcpx.cc,
    // props->latency = 0); efficiency 0.80 assumed (TCP/IP on the host, receive-side unpack on the GPU).
    {"tcpx", 0, 0, 0.80},
    // GPUDirect-TCPXO: its plugin reports no latency either (google/nccl-plugin-gpudirect-tcpxo
    // v1.0.17, fastrak_offload/nccl_shim.cc: props.latency = 0); efficiency 0.85 assumed (offloaded).
    {"tcpxo", 0, 0, 0.85},
    // HPE Slingshot-11 through aws-ofi-nccl on libfabric's CXI provider: the plugin reports the platform's
    // net latency, 0 off AWS (nccl_ofi_net.cpp: props->latency = net_latency >= 0 ? net_latency : 0; only
    // platform-aws sets it); efficiency as RoCE's, assumed (an Ethernet-framed RDMA NIC).
    {"slingshot", 0, 0, 0.96},
    // NCCL's socket transport reports no latency (net_socket.cc); 10 us for the kernel TCP stack assumed;
    // 1448 / 1538 bytes of TCP payload per MTU-1500 frame.
    {"socket", 10 * us, 0, 0.94},
};

topologies::Cluster with_priors(topologies::Cluster c) {
  // NCCL's costs as NCCL models them: its latency table and nothing more, except a host launch cost.
  auto& cl = c.collectives;
  cl.latency_scale = 1;
  cl.launch_latency = 0;
  cl.host_launch = 5 * us;
  cl.host_launch_per_channel = 0;
  cl.ring_depth = cl.tree_depth = cl.nvls_depth = 0;
  cl.nvls_chunk_overhead = 0;
  cl.slice_latency = 0;
  // NCCL's own rating of a channel across nodes: a DGX H100 pair's ring graph has 8 channels of
  // 48 GB/s (search.cc, speedArrayInter), run on twice as many (connect.cc, ncclTopoPostset).
  cl.net_channel_rate = 24e9;
  c.intra.ll128_efficiency = 1;  // LL128 as NCCL's tuner rates it
  c.intra.step_latency = 0;      // NCCL's per-hop table, the same for every NVLink generation
  if (c.intra.name == "nvlink3") c.intra.efficiency = 20.0 / 25;
  if (c.intra.name == "nvlink4") {
    c.intra.efficiency = 20.6 / 25;
    if (c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = 274.3e9 * 9 / 8 / 450e9;
  }
  c.intra.nvls_tree_efficiency = 0;  // as one node's: NCCL's tuner rates both alike (tuning.cc)
  if (c.intra.name == "nvlink5") {  // NCCL's 40.1 of 50 GB/s per link; NVLS as NVLink4's x NCCL's 0.74 / 0.85
    c.intra.efficiency = 40.1 / 50;
    if (c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = 274.3e9 * 9 / 8 / 450e9 * 0.74 / 0.85;
  }
  for (const auto& t : kTransportPriors)
    if (c.nics.transport.kind == t.kind) {
      c.nics.transport.latency = t.latency;
      c.nics.transport.overhead = t.overhead;
      c.nics.efficiency = c.nics.transport.efficiency = t.efficiency;
    }
  return c;
}

std::string prior_sources() {
  return "priors (never from the shipped tables): NCCL's latency table of the release that ran, at scale 1, with "
         "no launch latency and no pipeline fill (tuning.cc); host launch 5 us per GPU (a CUDA kernel launch, "
         "pytorch/pytorch#41383: ~7 us per op with dispatch); NVLink ring efficiency = NCCL's own per-link rate / line "
         "rate (topo.h: 20 of 25 GB/s NVLink3, 20.6 of 25 NVLink4, 40.1 of 50 NVLink5), no NVLink step latency beyond "
         "NCCL's table; NVLS efficiency 0.686 from the NCCL maintainers' "
         "480 GB/s bus bandwidth on 8 H100 (NVIDIA/nccl-tests#212), x 0.74 / 0.85 on NVLink5 (NCCL's nvlsEfficiency); NCCL's per-step network cost for the host CPU "
         "(getNetOverhead: 1 us Intel, 2 us AMD); 24 GB/s a channel across nodes, NCCL's own rating (a DGX H100 "
         "pair's ring graph: 8 channels of 48 GB/s, run on 16; search.cc, connect.cc); transports: IB/RoCE latency 0 as NCCL's verbs transport reports it, "
         "efficiency 0.97 (nccl-tests#267) / 0.96; EFA 20 us per network step and 3 us more per Simple step "
         "(aws-ofi-nccl's own cost model, src/tuner/nccl_ofi_model.cpp), efficiency 0.90 assumed; TCPX latency 0 as "
         "its plugin reports it, efficiency 0.80 assumed; TCPXO as TCPX, efficiency 0.85 assumed; Slingshot "
         "(aws-ofi-nccl over CXI) latency 0 as the plugin reports it off AWS, efficiency 0.96 as RoCE's, assumed";
}

}  // namespace tagcsim::calibrate
