// tagcsim collective: one NCCL collective on a cluster, the nccl-tests way.
#include "app/commands.hpp"
#include "sim/collective.hpp"
#include "sim/replay.hpp"
#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <vector>

namespace tagcsim::app {
namespace {

struct CollectiveOptions {
  std::string cluster;
  std::string op = "all_reduce";
  std::string bytes = "1GiB";
  int gpus = 0;
  bool gpus_given = false;
  std::string algorithm = "auto";
  std::string protocol = "auto";
  int gpus_per_process = 1;
  std::string nccl_version;
  std::string format = "table";
};

// A preset name, or a YAML file with a `cluster:` key (a scenario works too).
topologies::Cluster load_cluster_arg(const std::string& arg) {
  if (arg.find('.') == std::string::npos && arg.find('/') == std::string::npos) return topologies::preset(arg);
  const Input doc = Input::load_file(arg);
  if (doc.is_map() && doc.has("cluster")) return topologies::load_cluster(doc["cluster"]);
  doc.fail("expected a YAML file with a 'cluster:' key, or a cluster preset name");
}

int run(const CollectiveOptions& o) {
  auto c = load_cluster_arg(o.cluster);
  const auto op = sim::parse_collective_op(o.op);
  const auto algorithm = sim::parse_algorithm(o.algorithm);
  const auto protocol = sim::parse_protocol(o.protocol);
  if (op == sim::CollectiveOp::AllToAll && algorithm != sim::Algorithm::Auto)
    throw InputError("--algorithm: an alltoall is point to point (sends and receives), it has no algorithm to pick");
  if (o.gpus_per_process < 1) throw InputError("--gpus-per-process: expected an integer >= 1");
  // The NCCL release whose tuning table applies (the newest the model knows, unless the cluster pins one).
  if (!o.nccl_version.empty())
    c.nccl.version = topologies::parse_nccl_version_key(Input::load_string(o.nccl_version, "--nccl-version"));
  if (o.format != "table" && o.format != "json")
    throw InputError(fmt::format("--format: expected table or json; got '{}'", o.format));
  if (o.gpus_given && o.gpus < 1) throw InputError(fmt::format("--gpus: expected an integer >= 1, got {}", o.gpus));
  if (o.gpus > 0) {  // take the first --gpus GPUs of the cluster
    if (o.gpus < c.gpus_per_node) {
      c.nodes = 1;
      c.gpus_per_node = o.gpus;
    } else if (o.gpus % c.gpus_per_node != 0) {
      throw InputError(fmt::format("--gpus: {} GPUs are not whole nodes of {} GPUs", o.gpus, c.gpus_per_node));
    } else {
      c.nodes = o.gpus / c.gpus_per_node;
    }
    topologies::validate(c, "--gpus");
  }
  std::vector<double> sizes;
  std::stringstream ss(o.bytes);
  for (std::string item; std::getline(ss, item, ',');) sizes.push_back(parse_bytes(item, "--bytes"));

  const auto group = sim::whole_cluster(c);
  const sim::PlanOptions options{.algorithm = algorithm, .protocol = protocol, .gpus_per_process = o.gpus_per_process};
  std::vector<sim::CollectivePlan> plans;
  for (double bytes : sizes) plans.push_back(sim::plan_collective(c, op, bytes, group, options));
  std::string out;
  if (o.format == "table") {
    out += fmt::format("# {} on {}: {} nodes x {} GPUs = {} GPUs ({}), {}{}\n", sim::to_string(op), c.name,
                       c.nodes, c.gpus_per_node, c.gpus(), o.gpus > 0 ? "--gpus" : "the preset's size; --gpus N to change",
                       c.gpu.name,
                       c.nodes > 1 ? fmt::format(", {} x {:g} Gb/s NICs per node, {} ({} rails per node), {} hosts",
                                                 c.nics.count, c.nics.bandwidth * 8 / 1e9,
                                                 c.nics.transport.name.empty() ? "no transport" : c.nics.transport.name,
                                                 c.rails(), topologies::to_string(c.host_cpu))
                                   : "");
    if (const auto pins = topologies::describe(c.nccl); !pins.empty())
      out += fmt::format("# pinned: {}{}\n", pins, c.nccl.source.empty() ? "" : " (" + c.nccl.source + ")");
    if (!c.nccl.tuner_rules.empty()) {  // which sizes the tuner plugin's rules chose, by each rule's line
      std::string chosen;
      for (const auto& p : plans)
        if (p.tuner_rule >= 0)
          chosen += fmt::format("{}{:.0f} B (line {})", chosen.empty() ? "" : ", ", p.bytes,
                                c.nccl.tuner_rules[p.tuner_rule].line);
      out += fmt::format("# tuner config {}: {}\n", c.nccl.tuner_config,
                         chosen.empty() ? "no rule matched; NCCL's own choice" : "its rules chose " + chosen);
    }
    if (std::any_of(plans.begin(), plans.end(), [](const auto& p) { return p.ll128_left_out; }))
      out += "# LL128 left out: all-gathers and reduce-scatters across nodes run Simple where NCCL's tuner rates "
             "LL128 faster, as measured on Hopper and Blackwell (docs/calibration.md)\n";
    if (std::any_of(plans.begin(), plans.end(), [](const auto& p) { return p.ll128_off; }))
      out += "# LL128 off: NCCL enables it by default only over NVLink and NICs beside the GPUs, not over "
             "sockets or PCIe (tuning.cc; NCCL_PROTO naming it, `nccl: {proto}` here, turns it on)\n";
    // The largest size whose channels, not its NICs, bind across nodes: say what caps it.
    for (auto p = plans.rbegin(); p != plans.rend(); ++p)
      if (p->channel_bound_rate > 0) {
        out += fmt::format("# NCCL's channels bind across nodes, not the NICs: {} channels x {:g} GB/s = {:.0f} GB/s a "
                           "node where its NICs take {:.0f} (collectives.net_channel_rate, fitted per GPU generation; "
                           "more channels, `nccl: {{channels: N}}` as NCCL_MIN_CTAS, raise it; docs/calibration.md)\n",
                           p->channels, c.collectives.net_channel_rate / 1e9, p->channel_bound_rate / 1e9,
                           p->rails * c.rail_bandwidth() / 1e9);
        break;
      }
    if (const auto caveat = topologies::transport_caveat(c.nics.transport.kind); c.nodes > 1 && !caveat.empty())
      out += "# note: " + caveat + "\n";
    const std::string key = topologies::connection_key(c);
    if (op == sim::CollectiveOp::AllToAll)
      out += "# all-to-all: point-to-point sends and receives, each GPU's network bytes through its own rail; "
             "predicted from the fitted links, never fitted (docs/calibration.md, all-to-all)\n";
    else if (c.gpus() > 1)
      if (const auto held = topologies::collective_held_out(key); !held.empty())
        out += fmt::format("# held out, on published tables {}: {}\n", topologies::connection_text(c), held);
    if (const int largest = topologies::collective_held_out_largest_nodes(key);
        largest > 0 && c.nodes > largest && op != sim::CollectiveOp::AllToAll)
      out += fmt::format("# past the tables: those span at most {} {}s, this one {}; the latency its ring's extra "
                         "steps add is NCCL's and the transport's per-step costs extrapolated (docs/calibration.md)\n",
                         largest, topologies::connection_node_word(key), c.nodes);
    out += fmt::format("# {:>12} {:>9} {:>6} {:>3} {:>12} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11}\n", "size (B)",
                       "algo", "proto", "ch", "time (us)", "algbw GB/s", "busbw GB/s", "network us", "nvlink us",
                       "latency us", "tuner us");
  } else {
    out += fmt::format("{{\"op\": \"{}\", \"cluster\": \"{}\", \"nodes\": {}, \"gpus_per_node\": {}, \"ranks\": {}, "
                       "\"points\": [",
                       sim::to_string(op), c.name, c.nodes, c.gpus_per_node, c.gpus());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto& plan = plans[i];
    const double t = sim::simulate_collective(c, plan);
    if (o.format == "table")
      out += fmt::format(
          "  {:>12.0f} {:>9} {:>6} {:>3} {:>12.2f} {:>10.2f} {:>10.2f} {:>11.2f} {:>11.2f} {:>11.2f} {:>11.2f}\n",
          sizes[i], sim::to_string(plan.algorithm), sim::to_string(plan.protocol), plan.channels, t * 1e6,
          plan.algbw(t) / 1e9, plan.busbw(t) / 1e9, plan.network_seconds * 1e6, plan.nvlink_seconds * 1e6,
          plan.latency_seconds * 1e6, plan.tuner_seconds * 1e6);
    else
      out += fmt::format("{}\n  {{\"bytes\": {:.0f}, \"algorithm\": \"{}\", \"protocol\": \"{}\", \"channels\": {}, "
                         "\"time_s\": {:.9g}, \"algbw_GBps\": {:.6g}, \"busbw_GBps\": {:.6g}, \"network_s\": {:.9g}, "
                         "\"nvlink_s\": {:.9g}, \"latency_s\": {:.9g}, \"tuner_s\": {:.9g}{}}}",
                         i ? "," : "", sizes[i], sim::to_string(plan.algorithm), sim::to_string(plan.protocol),
                         plan.channels, t, plan.algbw(t) / 1e9, plan.busbw(t) / 1e9, plan.network_seconds,
                         plan.nvlink_seconds, plan.latency_seconds, plan.tuner_seconds,
                         c.nccl.tuner_rules.empty()
                             ? ""
                             : fmt::format(", \"tuner_rule_line\": {}",
                                           plan.tuner_rule >= 0 ? std::to_string(c.nccl.tuner_rules[plan.tuner_rule].line)
                                                                : std::string("null")));
  }
  if (o.format == "json") out += "\n]}\n";
  fmt::print("{}", out);
  return 0;
}

}  // namespace

void add_collective_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CollectiveOptions>();
  auto* cmd = app.add_subcommand("collective", "Predict one NCCL collective: time, algbw and busbw");
  cmd->add_option("--cluster", o->cluster, "Cluster preset name, or a YAML file with a 'cluster:' key")->required();
  cmd->add_option("--op", o->op, "all_gather, reduce_scatter, all_reduce, reduce, broadcast or alltoall");
  cmd->add_option("--bytes", o->bytes, "Buffer size(s), e.g. 1GiB or 1MiB,64MiB,1GiB");
  auto* gpus = cmd->add_option("--gpus", o->gpus, "Use this many GPUs of the cluster (whole nodes)");
  cmd->add_option("--algorithm", o->algorithm, "auto (NCCL's choice), ring, tree, nvls, nvls_tree or pat (as NCCL_ALGO)");
  cmd->add_option("--protocol", o->protocol, "auto (NCCL's choice), ll, ll128 or simple (as NCCL_PROTO)");
  cmd->add_option("--gpus-per-process", o->gpus_per_process,
                  "GPUs one process launches (nccl-tests -g): the host's launch cost grows with them");
  cmd->add_option("--nccl-version", o->nccl_version,
                  "NCCL release whose tuning table applies, e.g. 2.18.5 (default: the cluster's, else the newest)");
  cmd->add_option("--format", o->format, "table (default) or json");
  cmd->callback([o, gpus, &exit_code] {
    o->gpus_given = gpus->count() > 0;
    exit_code = run(*o);
  });
}

}  // namespace tagcsim::app
