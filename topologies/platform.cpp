#include "topologies/platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace sg4 = simgrid::s4u;

namespace tagcsim::topologies {
namespace {

using Dir = sg4::LinkInRoute::Direction;
using NetPoint = simgrid::kernel::routing::NetPoint;

sg4::Link* duplex_link(sg4::NetZone* zone, const std::string& name, double bandwidth) {
  auto* link = zone->create_split_duplex_link(name, bandwidth > 0 ? bandwidth : 1e18);
  link->set_latency(0);
  link->seal();
  return link;
}

// Connects `point` to the centre of the star `zone` through `link`.
void attach(sg4::NetZone* zone, NetPoint* point, NetPoint* gateway, sg4::Link* link) {
  zone->add_route(point, nullptr, gateway, nullptr, {{link, Dir::UP}}, false);
  zone->add_route(nullptr, point, nullptr, gateway, {{link, Dir::DOWN}}, false);
}

// What a node plugs into the fabric: one host and link per rail, or one for all NICs.
struct Ports {
  int rails;         // hosts per node
  double bandwidth;  // of each
};

// Hosts of nodes [first, first+count), rails [rail_first, rail_first+rail_count) in the star `zone`,
// each with its own link; fills p.nodes / p.nic_links at their slots.
void add_hosts(sg4::NetZone* zone, const Ports& ports, int first, int count, int rail_first, int rail_count,
               Platform& p) {
  for (int i = first; i < first + count; ++i)
    for (int r = rail_first; r < rail_first + rail_count; ++r) {
      const std::string name = ports.rails > 1 ? fmt::format("node{}-rail{}", i, r) : fmt::format("node{}", i);
      auto* host = zone->create_host(name, 1e15);
      host->seal();
      auto* nic = duplex_link(zone, name + "-nics", ports.bandwidth);
      attach(zone, host->get_netpoint(), nullptr, nic);
      p.nodes[std::size_t(i) * ports.rails + r] = host;
      p.nic_links[std::size_t(i) * ports.rails + r] = nic;
    }
}

}  // namespace

void configure_engine(sg4::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
  engine.set_config("network/TCP-gamma:1e15");
  engine.set_config("contexts/stack-size:64");
  engine.set_config("network/maxmin-selective-update:yes");
}

Platform build_platform(sg4::Engine& engine, const Cluster& c, bool per_rail) {
  (void)engine;
  Platform p;
  p.rails = per_rail ? c.rails() : 1;
  const Ports ports{p.rails, c.node_injection_bandwidth() / p.rails};
  p.nodes.resize(std::size_t(c.nodes) * p.rails);
  p.nic_links.resize(p.nodes.size());
  auto* root = sg4::create_star_zone("fabric");
  const int leaf_size = c.nodes_in_leaf();
  if (leaf_size == c.nodes) {
    add_hosts(root, ports, 0, c.nodes, 0, p.rails, p);
    root->seal();
    return p;
  }
  const int leaves = c.leaves();
  const double oversub = c.fabric.oversubscription;
  // A rail-optimized leaf group is one switch per rail; built per rail, each gets its share of uplink.
  const int switches_per_leaf = c.fabric.rail_optimized ? p.rails : 1;
  const double leaf_up_bw = leaf_size * c.node_injection_bandwidth() / oversub / switches_per_leaf;
  const int leaves_per_pod = c.leaves_in_pod();
  const int npods = c.pods();
  const bool pods = npods > 1;
  for (int pod = 0; pod < npods; ++pod) {
    sg4::NetZone* pod_zone = root;
    NetPoint* pod_gw = nullptr;
    if (pods) {
      pod_zone = sg4::create_star_zone(fmt::format("pod{}", pod));
      pod_zone->set_parent(root);
      // The pod's switch sits in a zone of its own beside the leaves: SimGrid 3.32 cannot route
      // from a host two zones down to a router of its grandparent zone (docs/simgrid-notes.md).
      auto* spine = sg4::create_star_zone(fmt::format("pod{}-spine", pod));
      spine->set_parent(pod_zone);
      pod_gw = spine->create_router(fmt::format("pod{}-switch", pod));
      spine->seal();
      pod_zone->add_route(spine->get_netpoint(), nullptr, pod_gw, nullptr, {}, false);
      pod_zone->add_route(nullptr, spine->get_netpoint(), nullptr, pod_gw, {}, false);
    }
    for (int l = 0; l < leaves_per_pod && pod * leaves_per_pod + l < leaves; ++l) {
      const int leaf = pod * leaves_per_pod + l;
      // The last leaf may be partly filled; its switch keeps all its uplinks.
      const int count = std::min(leaf_size, c.nodes - leaf * leaf_size);
      for (int s = 0; s < switches_per_leaf; ++s) {
        const std::string name =
            switches_per_leaf > 1 ? fmt::format("leaf{}-rail{}", leaf, s) : fmt::format("leaf{}", leaf);
        auto* zone = sg4::create_star_zone(name);
        zone->set_parent(pod_zone);
        auto* gw = zone->create_router(name + "-switch");
        if (switches_per_leaf > 1) add_hosts(zone, ports, leaf * leaf_size, count, s, 1, p);
        else add_hosts(zone, ports, leaf * leaf_size, count, 0, p.rails, p);
        zone->seal();
        auto* up = duplex_link(pod_zone, name + "-uplink", leaf_up_bw);
        attach(pod_zone, zone->get_netpoint(), gw, up);
        p.leaf_uplinks.push_back(up);
      }
    }
    if (pods) {
      pod_zone->seal();
      auto* up = duplex_link(root, fmt::format("pod{}-uplink", pod),
                             leaves_per_pod * switches_per_leaf * leaf_up_bw / oversub);
      attach(root, pod_zone->get_netpoint(), pod_gw, up);
      p.pod_uplinks.push_back(up);
    }
  }
  root->seal();
  return p;
}

}  // namespace tagcsim::topologies
