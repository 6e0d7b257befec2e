#include "topologies/platform.hpp"

#include <fmt/format.h>

#include <string>

namespace sg4 = simgrid::s4u;

namespace tagcsim::topologies {
namespace {

using Dir = sg4::LinkInRoute::Direction;

sg4::Link* duplex_link(sg4::NetZone* zone, const std::string& name, double bandwidth) {
  auto* link = zone->create_split_duplex_link(name, bandwidth);
  link->set_latency(0);
  link->seal();
  return link;
}

// Connects `point` to the centre of the star `zone` through `link`.
void attach(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* point,
            simgrid::kernel::routing::NetPoint* gateway, sg4::Link* link) {
  zone->add_route(point, nullptr, gateway, nullptr, {{link, Dir::UP}}, false);
  zone->add_route(nullptr, point, nullptr, gateway, {{link, Dir::DOWN}}, false);
}

// A star of nodes [first, first+count) with one link per node; returns the
// zone's gateway so that the parent can give it an uplink.
simgrid::kernel::routing::NetPoint* node_star(sg4::NetZone* zone, const Cluster& c, int first, int count,
                                              bool with_gateway, Platform& p) {
  const double node_bw = c.nics.count * c.nics.bandwidth * c.nics.efficiency;
  simgrid::kernel::routing::NetPoint* gateway =
      with_gateway ? zone->create_router(zone->get_name() + "-switch") : nullptr;
  for (int i = first; i < first + count; ++i) {
    auto* host = zone->create_host(fmt::format("node{}", i), 1e15);
    host->seal();
    auto* nic = duplex_link(zone, fmt::format("node{}-nics", i), node_bw > 0 ? node_bw : 1e18);
    attach(zone, host->get_netpoint(), nullptr, nic);
    p.nodes.push_back(host);
    p.nic_links.push_back(nic);
  }
  return gateway;
}

}  // namespace

void configure_engine(sg4::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
  engine.set_config("network/TCP-gamma:1e15");
  engine.set_config("contexts/stack-size:64");
  engine.set_config("network/maxmin-selective-update:yes");
}

Platform build_platform(sg4::Engine& engine, const Cluster& c) {
  Platform p;
  using K = Fabric::Kind;
  const double node_bw = c.nics.count * c.nics.bandwidth * c.nics.efficiency;
  auto* root = sg4::create_star_zone("fabric");
  const int leaf_size =
      (c.fabric.kind == K::SingleSwitch || c.fabric.nodes_per_leaf <= 0 || c.fabric.nodes_per_leaf >= c.nodes)
          ? c.nodes
          : c.fabric.nodes_per_leaf;
  if (leaf_size == c.nodes) {
    node_star(root, c, 0, c.nodes, false, p);
    root->seal();
    (void)engine;
    return p;
  }
  const int leaves = c.nodes / leaf_size;
  const double oversub = c.fabric.oversubscription;
  const double leaf_up_bw = leaf_size * node_bw / oversub;
  const bool pods = c.fabric.kind == K::FatTree3 && c.fabric.leaves_per_pod > 0 && c.fabric.leaves_per_pod < leaves;
  const int leaves_per_pod = pods ? c.fabric.leaves_per_pod : leaves;
  const int npods = leaves / leaves_per_pod;
  for (int pod = 0; pod < npods; ++pod) {
    sg4::NetZone* pod_zone = root;
    simgrid::kernel::routing::NetPoint* pod_gw = nullptr;
    if (pods) {
      pod_zone = sg4::create_star_zone(fmt::format("pod{}", pod));
      pod_zone->set_parent(root);
      pod_gw = pod_zone->create_router(fmt::format("pod{}-switch", pod));
    }
    for (int l = 0; l < leaves_per_pod; ++l) {
      const int leaf = pod * leaves_per_pod + l;
      auto* zone = sg4::create_star_zone(fmt::format("leaf{}", leaf));
      zone->set_parent(pod_zone);
      auto* gw = node_star(zone, c, leaf * leaf_size, leaf_size, true, p);
      zone->seal();
      auto* up = duplex_link(pod_zone, fmt::format("leaf{}-uplink", leaf), leaf_up_bw);
      attach(pod_zone, zone->get_netpoint(), gw, up);
      p.leaf_uplinks.push_back(up);
    }
    if (pods) {
      pod_zone->seal();
      auto* up = duplex_link(root, fmt::format("pod{}-uplink", pod), leaves_per_pod * leaf_up_bw / oversub);
      attach(root, pod_zone->get_netpoint(), pod_gw, up);
      p.pod_uplinks.push_back(up);
    }
  }
  root->seal();
  return p;
}

}  // namespace tagcsim::topologies
