// The pieces the cluster presets are built from: link generations with their fitted efficiencies,
// NIC sets, the builder, and the source strings the presets quote. Defined in presets.cpp; the HPC
// centres' systems (presets_hpc.cpp) use them too. Internal to topologies/.
#pragma once

#include <string>
#include <vector>

#include "topologies/cluster.hpp"

namespace tagcsim::topologies::detail {

inline constexpr double GB = 1e9;
inline constexpr double Gbps = 1e9 / 8;  // bytes/s
inline constexpr double us = 1e-6;

// NVLink3 and NVLink4 through NVSwitches, NCCL's fitted efficiencies with them; NVLink4 as a mesh of
// four GPUs (6 links a pair), the same links without a switch.
IntraNode nvlink3();
IntraNode nvlink4();
IntraNode nvlink4_mesh4();

// `count` NICs of `gbps` a node, `latency` one way, over the named transport profile.
Nics nics(int count, double gbps, double latency, const std::string& transport);
// A preset: NCCL's fitted costs for its host CPU, the GPU preset named, and its sources.
Cluster make(std::string name, int nodes, int gpn, const std::string& gpu, IntraNode intra, Nics nics,
             Fabric fabric, std::string source, HostCpu cpu = HostCpu::Intel);
Fabric single_switch(double latency);
std::string transport_src(const Nics& n);

extern const char* const kNvlink3Src;
extern const char* const kNvlink4Src;
extern const char* const kLatencySrc;
extern const char* const kCollSrc;

// The presets of HPC centres' GPU systems (presets_hpc.cpp), in the order `tagcsim show` lists them.
std::vector<Cluster> hpc_presets();

}  // namespace tagcsim::topologies::detail
