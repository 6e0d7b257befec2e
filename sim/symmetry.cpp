#include "sim/symmetry.hpp"

#include <numeric>

namespace tagcsim::sim {
bool rotating_chain(const CollectivePlan& plan) {
  return is_chain(plan.op) && plan.node_egress_bytes > 0 && plan.group.nodes > 1 && plan.group.nodes <= kRotatingChainNodes;
}

int reduced_group_nodes(const Group& g, int full_nodes, int reduced_nodes) {
  const long span = long(g.nodes) * g.node_stride;
  return span >= full_nodes ? reduced_nodes / g.node_stride : g.nodes;
}

int symmetric_nodes(const Schedule& schedule, const topologies::Cluster& c) {
  using K = topologies::Fabric::Kind;
  const long N = c.nodes;
  // The repeating unit of the fabric: a leaf, a pod, or one node behind a single switch.
  long cell = 1;
  if (c.fabric.kind != K::SingleSwitch && c.leaves() > 1)
    cell = c.fabric.kind == K::FatTree3 && c.pods() > 1 ? long(c.nodes_in_leaf()) * c.leaves_in_pod()
                                                        : c.nodes_in_leaf();
  // Two cells, so that rings that cross cells still do. Each cell of a ring crossing cells sends
  // one hop out and takes one in however many cells the ring has, so two stand for any number:
  // the cluster needs whole periods of the patterns (`base`), not whole multiples of the cut.
  long period = N / cell >= 2 ? 2 * cell : N;
  long base = cell;
  // A partly filled last leaf carries no more than a full one on the same uplinks (one hop out and
  // one in per ring crossing it), so the full leaves set the time, provided it holds whole repeats
  // of the groups' pattern (`pattern`: their spans and strides), so that no group meets it
  // elsewhere in its pattern than a full leaf's groups do.
  long pattern = 1;
  for (const auto& t : schedule.tasks) {
    for (const auto& ph : t.phases) {
      const Group& g = ph.plan.group;
      if (g.nodes <= 1) continue;
      const long span = long(g.nodes) * g.node_stride;
      if (span >= N) {
        if (rotating_chain(ph.plan)) return c.nodes;
        pattern = std::lcm(pattern, long(g.node_stride));
        // A ring over the whole cluster: keep at least two nodes in it, and
        // its stride in step with the cells.
        period = std::lcm(period, 2L * g.node_stride);
        base = std::lcm(base, long(g.node_stride));
      } else {
        // Groups tiling the cluster; one that straddles cells repeats with the cells every
        // lcm(span, cell) nodes, the period the cut must hold whole.
        if (N % span != 0) return c.nodes;
        pattern = std::lcm(pattern, span);
        period = std::lcm(period, span);
        base = std::lcm(base, span);
      }
      if (period >= N) return c.nodes;
    }
  }
  if (N % base == 0) return int(period);
  return base == cell && (N % cell) % pattern == 0 ? int(period) : c.nodes;
}

topologies::Cluster reduced_cluster(const topologies::Cluster& c, int nodes) {
  topologies::Cluster r = c;
  r.nodes = nodes;
  return r;
}

}  // namespace tagcsim::sim
