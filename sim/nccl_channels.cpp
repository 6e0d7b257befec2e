#include "sim/nccl_channels.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tagcsim::sim {
namespace {

// NCCL's graph search across nodes (src/graph/search.cc, ncclTopoCompute) tries ring speeds, GB/s a
// channel, from the fastest its generation's speedArrayInter lists that one NIC's path carries, and
// puts as many channels through each NIC as fit at that speed.
constexpr double kSpeedsInterSm80[] = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
constexpr double kSpeedsInterSm90[] = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
constexpr double kSpeedsInterSm100[] = {96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};

template <std::size_t N>
double ring_speed(const double (&speeds)[N], double nic_gbps) {
  for (double s : speeds)
    if (s <= nic_gbps) return s;
  return speeds[N - 1];
}

}  // namespace

int communicator_channels(const topologies::Cluster& c, int n, int k, int rails) {
  if (c.nccl.channels > 0) return c.nccl.channels;
  if (n == 1) {
    // Inside a node the search fills the NVLinks with rings of ~10-12 GB/s each (24 channels on
    // NVLink3, 32, its maximum, on NVLink4, 16 on H800's 8 NVLinks), at least 2.
    const double rate = k > 1 ? c.intra.group_bandwidth(k, c.gpus_per_node) * c.intra.efficiency : c.rail_bandwidth();
    return std::clamp(int(std::lround(rate / 10e9)), 2, 32);
  }
  // Across nodes every ring channel leaves through a NIC: the group's NICs times the channels one
  // NIC carries at the speed its bandwidth allows (one, but for NICs far faster than the speeds),
  // at most 16 (the ring graph's maxChannels, MAXCHANNELS / 2). ncclTopoDupChannels doubles them
  // when a channel runs at 25 GB/s or more, but not past Ampere below 50 GB/s with more than 4;
  // ncclTopoPostset (src/graph/connect.cc) doubles every ring; and on Hopper and later a
  // multi-node ring faster than 45 GB/s a channel doubles again below 16.
  const double nic_gbps = c.nics.bandwidth / 1e9;
  const double speed = c.gpu.sm >= 100  ? ring_speed(kSpeedsInterSm100, nic_gbps)
                       : c.gpu.sm >= 90 ? ring_speed(kSpeedsInterSm90, nic_gbps)
                                        : ring_speed(kSpeedsInterSm80, nic_gbps);
  const int nics = std::max(1, rails * c.nics.count / c.rails());
  int ch = std::min(16, nics * std::max(1, int(nic_gbps / speed)));
  if (speed >= 25 && !(c.gpu.sm > 80 && speed < 50 && ch > 4)) ch = std::min(16, 2 * ch);
  ch = std::min(32, 2 * ch);
  if (c.gpu.sm >= 90 && speed > 45 && ch < 16) ch *= 2;
  return std::clamp(ch, 2, 32);
}

}  // namespace tagcsim::sim
