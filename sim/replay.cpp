#include "sim/replay.hpp"

#include "common/child_process.hpp"
#include "sim/compute.hpp"
#include "sim/symmetry.hpp"
#include "topologies/platform.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sg4 = simgrid::s4u;

namespace tagcsim::sim {
namespace {

double wall_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct Run {
  const Schedule* schedule = nullptr;
  const topologies::Cluster* cluster = nullptr;  // as built: perhaps cut down
  int full_nodes = 0;  // the cluster's; the platform may hold fewer (sim/symmetry.hpp)
  const topologies::Platform* platform = nullptr;
  std::vector<sg4::SemaphorePtr> done;
  std::vector<char> finished;  // actors take turns, so a plain flag saves the semaphore's simcalls
  // The representative GPU's SMs, shared by its compute and NCCL kernels: the host the stream
  // actors run on, whose speed is one second of kernel work per second.
  sg4::Host* gpu = nullptr;
  double gpu_speed = 0;
  int sms = 0;  // its SM count (0: unknown, kernels do not share)
  // Every GPU waits for the slowest at each collective, so the job's kernels run at its pace
  // (topologies/stragglers.hpp); the host's work does not change.
  double straggler_speed = 1;
  double block_share = 1;  // of an SM, what one NCCL block takes from the compute kernels
  Replay out;
};

int leaf_of(const topologies::Cluster& c, int node) { return node / c.nodes_in_leaf(); }
int pod_of(const topologies::Cluster& c, int node) { return leaf_of(c, node) / c.leaves_in_pod(); }

void count_traffic(Run& run, int src, int dst, double bytes) {
  const auto& c = *run.cluster;
  run.out.nic_bytes_per_node += bytes / c.nodes;
  if (leaf_of(c, src) != leaf_of(c, dst)) run.out.uplink_bytes_per_leaf += bytes / c.leaves();
  if (pod_of(c, src) != pod_of(c, dst)) run.out.uplink_bytes_per_pod += bytes / c.pods();
}

// The network phase of a collective: every node sends its share to the next
// node of its ring, all at once, through the rails its GPUs use (one flow per
// rail when the platform is built per rail); the phase ends when the slowest
// flow ends.
//
// A reduce or broadcast on a small ring (sim/symmetry.hpp) is a chain: S on
// every hop but the one out of its root (a reduce ends there) or into it (a
// broadcast starts there). The phase's `count` chains run back to back, their
// roots rotating over the ranks; those whose roots share a node run as one,
// so a phase is at most n rounds of n-1 flows. Each round lasts S/B per chain
// uncontended, so the phase still lasts at least count x its uncontended time.
void network_phase(Run& run, const Phase& phase) {
  const CollectivePlan& plan = phase.plan;
  const auto& pf = *run.platform;
  const int nodes = pf.node_count();
  Group g = plan.group;
  g.nodes = reduced_group_nodes(g, run.full_nodes, nodes);
  if (g.nodes <= 1 || plan.node_egress_bytes <= 0) return;
  const int rings = nodes / g.nodes;
  // Built per rail, a collective loads only its GPUs' rails; otherwise one link stands for all.
  const int first_rail = pf.rails > 1 ? run.cluster->rail_of_gpu(g.first_gpu) : 0;
  const int rails = pf.rails > 1 ? std::clamp(plan.rails, 1, pf.rails - first_rail) : 1;
  // Chains rooted on each node of the ring, in the order their roots come; -1: no hop idle.
  std::vector<std::pair<int, int>> rounds;  // (root node, chains)
  double hop_bytes = plan.node_egress_bytes;
  if (rotating_chain(plan)) {
    // symmetric_nodes() never cuts these rings down.
    if (g.nodes != plan.group.nodes) throw std::logic_error("replay: a rotating chain's ring was cut down");
    hop_bytes *= double(g.nodes) / (g.nodes - 1);  // the plan books (n-1)/n of S per node
    const int ranks = plan.group.ranks();
    std::vector<int> chains(std::size_t(g.nodes), 0);
    for (int i = 0; i < std::min(phase.count, ranks); ++i) {
      const int node = (phase.root + i) % ranks / plan.group.gpus_per_node;
      if (chains[std::size_t(node)] == 0) rounds.push_back({node, 0});
      // Chain i, i + ranks, i + 2 ranks, ... all have this root.
      chains[std::size_t(node)] += (phase.count - 1 - i) / ranks + 1;
    }
    for (auto& [node, n] : rounds) n = chains[std::size_t(node)];
  } else {
    rounds.push_back({-1, phase.count});
  }
  const bool broadcast = plan.op == CollectiveOp::Broadcast;
  std::vector<sg4::CommPtr> flows;
  flows.reserve(std::size_t(nodes) * rails);
  for (const auto& [root, chains] : rounds) {
    const auto bytes = static_cast<std::uint64_t>(hop_bytes * chains / rails + 0.5);
    flows.clear();
    for (int r = 0; r < rings; ++r) {
      const int first = (r / g.node_stride) * g.nodes * g.node_stride + r % g.node_stride;
      for (int k = 0; k < g.nodes; ++k) {
        const int next = (k + 1) % g.nodes;
        if (root >= 0 && (broadcast ? next : k) == root) continue;
        const int src = first + k * g.node_stride;
        // An all-to-all sends each other node of the group its share; a ring, its successor all.
        const bool all_pairs = plan.op == CollectiveOp::AllToAll;
        for (int d = all_pairs ? 1 : 0; d < (all_pairs ? g.nodes : 1); ++d) {
          const int dst = first + (all_pairs ? (k + d) % g.nodes : next) * g.node_stride;
          const auto share = all_pairs ? static_cast<std::uint64_t>(double(bytes) / (g.nodes - 1) + 0.5) : bytes;
          for (int rail = first_rail; rail < first_rail + rails; ++rail)
            flows.push_back(sg4::Comm::sendto_async(pf.host(src, rail), pf.host(dst, rail), share));
          count_traffic(run, src, dst, double(share) * rails);
        }
      }
    }
    run.out.flows += flows.size();
    sg4::Comm::wait_all(flows);
  }
}

// Rails need their own links when some collective uses only some of a node's GPUs; when every
// collective spreads over all rails alike, one link per node is exact and faster.
bool needs_rails(const Schedule& schedule, const topologies::Cluster& c) {
  if (c.rails() <= 1) return false;
  for (const auto& t : schedule.tasks)
    for (const auto& ph : t.phases)
      if (ph.plan.node_egress_bytes > 0 && ph.plan.rails > 0 && ph.plan.rails < c.rails()) return true;
  return false;
}

void stream_actor(Run* run, std::vector<int> tasks) {
  for (int id : tasks) {
    const Task& t = run->schedule->tasks[id];
    auto wait_for = [run](int dep) {  // a released semaphore stays released for the next waiter
      if (run->finished[std::size_t(dep)]) return;
      run->done[dep]->acquire();
      run->done[dep]->release();
    };
    for (int dep : t.after) wait_for(dep);
    // Not before the host has issued it.
    double issued = t.issue_delay;  // after the step's start when the host waited for nothing yet
    for (int dep : t.issued_after) {
      wait_for(dep);
      issued = std::max(issued, run->out.timings[std::size_t(dep)].end + t.issue_delay);
    }
    if (issued > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(issued);
    const double start = sg4::Engine::get_clock();
    double remaining = t.stream == Stream::Host ? t.seconds : t.seconds / run->straggler_speed;
    // An NCCL kernel holds one SM per channel (or the measured share of one) for as long as its
    // collective is in flight, latency included: the compute stream's kernels run on the rest.
    sg4::ExecPtr hold;
    if (run->sms > 0 && !t.phases.empty()) {
      int channels = 0;
      for (const Phase& phase : t.phases) channels = std::max(channels, phase.plan.channels);
      const double share = std::min(0.9, channels * run->block_share / run->sms);
      if (share > 0)
        hold = sg4::Exec::init()->set_flops_amount(1e30)->set_bound(share * run->gpu_speed)->set_host(run->gpu)->start();
    }
    for (const Phase& phase : t.phases) {
      const double phase_start = sg4::Engine::get_clock();
      network_phase(*run, phase);
      const double network = sg4::Engine::get_clock() - phase_start;
      // A ring is a pipeline: NVLink and the network run at once, the slower
      // sets the pace; a chain's links take turns, so it lasts at least its
      // uncontended network time even though its flows finish sooner.
      const double floor = std::max(phase.plan.nvlink_seconds, phase.plan.network_seconds);
      const double rest = std::max(phase.count * floor - network, 0.0) +
                          phase.count * phase.plan.latency_seconds;
      if (rest > 0) sg4::this_actor::sleep_for(rest);
    }
    if (hold) hold->cancel();
    if (remaining > 0) {
      if (run->sms > 0 && t.stream == Stream::Compute)
        sg4::this_actor::exec_init(remaining * run->gpu_speed)->set_host(run->gpu)->wait();
      else
        sg4::this_actor::sleep_for(remaining);
    }
    run->out.timings[id] = {start, sg4::Engine::get_clock()};
    run->finished[std::size_t(id)] = 1;
    run->done[id]->release();
  }
}

Replay replay_here(const Schedule& schedule, const topologies::Cluster& cluster, bool exploit_symmetry) {
  int argc = 2;
  char name[] = "tagcsim";
  char quiet[] = "--log=root.thres:critical";
  char* argv[] = {name, quiet, nullptr};
  sg4::Engine engine(&argc, argv);
  topologies::configure_engine(engine);
  const double t0 = wall_now();
  const auto built = exploit_symmetry ? reduced_cluster(cluster, symmetric_nodes(schedule, cluster)) : cluster;
  const auto platform = topologies::build_platform(engine, built, needs_rails(schedule, cluster));
  Run run;
  run.cluster = &built;
  run.schedule = &schedule;
  run.full_nodes = cluster.nodes;
  run.platform = &platform;
  run.out.timings.resize(schedule.tasks.size());
  for (std::size_t i = 0; i < schedule.tasks.size(); ++i) run.done.push_back(sg4::Semaphore::create(0));
  run.finished.assign(schedule.tasks.size(), 0);
  run.straggler_speed = cluster.slowest_gpu_speed();  // of the whole job, not of the cut replayed
  if (const KernelProfile* prof = device_kernel_profile(cluster.gpu)) {
    run.sms = prof->sms;
    run.block_share = prof->nccl_block_share;
    run.gpu = platform.nodes[0];
    run.gpu_speed = run.gpu->get_speed();
  }
  std::vector<std::vector<int>> per_stream(kStreams);
  for (std::size_t i = 0; i < schedule.tasks.size(); ++i)
    per_stream[int(schedule.tasks[i].stream)].push_back(int(i));
  const double t1 = wall_now();
  // One actor per stream that has work, the host's included: a stream runs
  // its tasks in issue order, each after the tasks it waits for.
  for (int s = 0; s < kStreams; ++s)
    if (!per_stream[s].empty())
      sg4::Actor::create(to_string(Stream(s)), platform.nodes[0], stream_actor, &run, per_stream[s]);
  engine.run();
  run.out.platform_wall_s = t1 - t0;
  run.out.simulated_nodes = platform.node_count();
  run.out.run_wall_s = wall_now() - t1;
  return run.out;
}

// What the child sends before the timings: the scalar fields of Replay.
constexpr int kHeader = 7;

}  // namespace

Replay replay(const Schedule& schedule, const topologies::Cluster& cluster, bool exploit_symmetry) {
  const ChildProcess child = start_child(
      [&] {
        const Replay r = replay_here(schedule, cluster, exploit_symmetry);
        const double header[kHeader] = {double(r.flows),       r.platform_wall_s,       r.run_wall_s,
                                        double(r.simulated_nodes), r.nic_bytes_per_node, r.uplink_bytes_per_leaf,
                                        r.uplink_bytes_per_pod};
        std::string out(reinterpret_cast<const char*>(header), sizeof header);
        out.append(reinterpret_cast<const char*>(r.timings.data()), r.timings.size() * sizeof(TaskTiming));
        return out;
      },
      "replay");
  const std::string data = finish_child(child, "replay: the SimGrid run");
  const std::size_t expected = kHeader * sizeof(double) + schedule.tasks.size() * sizeof(TaskTiming);
  if (data.size() != expected) throw std::runtime_error("replay: the SimGrid run failed (status 0): no result");
  Replay r;
  double header[kHeader];
  std::memcpy(header, data.data(), sizeof header);
  r.flows = std::size_t(header[0]);
  r.platform_wall_s = header[1];
  r.run_wall_s = header[2];
  r.simulated_nodes = int(header[3]);
  r.nic_bytes_per_node = header[4];
  r.uplink_bytes_per_leaf = header[5];
  r.uplink_bytes_per_pod = header[6];
  r.timings.resize(schedule.tasks.size());
  std::memcpy(r.timings.data(), data.data() + sizeof header, schedule.tasks.size() * sizeof(TaskTiming));
  return r;
}

double simulate_collective(const topologies::Cluster& cluster, const CollectivePlan& plan) {
  Schedule s;
  Task t{.name = to_string(plan.op), .stream = Stream::AllGather, .category = Category::AllGather};
  t.phases = {{plan}};
  s.add(std::move(t));
  const Replay r = replay(s, cluster);
  return r.timings[0].end - r.timings[0].start;
}

}  // namespace tagcsim::sim
