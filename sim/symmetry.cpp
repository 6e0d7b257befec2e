#include "sim/symmetry.hpp"

#include <numeric>

namespace tagcsim::sim {
namespace {

bool aligned(long a, long b) { return a % b == 0 || b % a == 0; }

}  // namespace

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
  // Two cells, so that rings that cross cells still do.
  long period = N / cell >= 2 ? 2 * cell : N;
  for (const auto& t : schedule.tasks) {
    for (const auto& ph : t.phases) {
      const Group& g = ph.plan.group;
      if (g.nodes <= 1) continue;
      const long span = long(g.nodes) * g.node_stride;
      if (span >= N) {
        if (rotating_chain(ph.plan)) return c.nodes;
        // A ring over the whole cluster: keep at least two nodes in it, and
        // its stride in step with the cells.
        if (!aligned(g.node_stride, cell)) return c.nodes;
        period = std::lcm(period, 2L * g.node_stride);
      } else {
        // Groups tiling the cluster must tile the cells too.
        if (!aligned(span, cell) || N % span != 0) return c.nodes;
        period = std::lcm(period, span);
      }
      if (period >= N) return c.nodes;
    }
  }
  return N % period == 0 ? int(period) : c.nodes;
}

topologies::Cluster reduced_cluster(const topologies::Cluster& c, int nodes) {
  topologies::Cluster r = c;
  r.nodes = nodes;
  return r;
}

}  // namespace tagcsim::sim
