// Collective timings to calibrate against: nccl-tests stdout, and the published
// nccl-tests tables shipped in validation/data/published_measurements.yaml.
//
// Both become Points: one collective of one size on one layout of ranks, with
// the time nccl-tests measured. The fit (calibrate/fit.hpp) only needs these.
#pragma once

#include "sim/collective.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tagcsim::calibrate {

struct Point {
  std::string op_name;                   // "all_reduce", "alltoall", ... as the benchmark names it
  std::optional<sim::CollectiveOp> op;   // empty for collectives the model lacks (sendrecv, ...)
  int nodes = 1;
  int gpus_per_node = 1;
  double bytes = 0;                      // nccl-tests "size": the full buffer S
  double time_s = 0;                     // the time fitted (see parse_nccl_tests for which column)
  double algbw = 0;                      // bytes/s, as published / printed
  double busbw = 0;                      // bytes/s
  bool time_derived = false;             // time_s computed from a published busbw (no time published)
  std::string where;                     // "file:line" or a published entry id
  int gpus_per_process = 1;              // nccl-tests -g: GPUs one thread launches (nGpus in the header)
  unsigned algos = 0;                    // NCCL algorithms the run allowed (NcclPins mask), 0 = the cluster's
  unsigned protos = 0;                   // NCCL protocols the run allowed (NCCL_PROTO), 0 = the cluster's
  int nccl_version = 0;                  // NCCL version the run states (2.18.5 -> 21805), 0 = not stated
  std::string source;                    // who published it (S01, ...): the unit left out in validation
  int ranks() const { return nodes * gpus_per_node; }
};

// Layout and collective for logs whose header lacks them (old nccl-tests
// versions print neither "# Collective test starting" nor one line per rank).
struct ParseOptions {
  std::string op;          // "all_reduce"...; used when the log does not name its collective
  int nodes = 0;           // > 0: overrides the hosts counted in "#  Rank ... on HOST" lines
  int gpus_per_node = 0;   // > 0: overrides the ranks per host counted there
};

// Parses nccl-tests stdout (all_reduce_perf, all_gather_perf, reduce_scatter_perf, ...).
// Rows are "size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong"
// (out-of-place, then in-place). time_s is the faster of the two placements: both time the same
// collective, and noise only ever adds time. Lines starting with '#' are header/comments; other
// lines that do not start with a number (NCCL INFO, MPI warnings) are ignored; a line that starts
// with a number but is not a well-formed row is an InputError naming file:line.
std::vector<Point> parse_nccl_tests(std::string_view text, const std::string& file, const ParseOptions& opts = {});
std::vector<Point> load_nccl_tests_file(const std::string& path, const ParseOptions& opts = {});

// One published nccl-tests table: entries that share a source, hardware, benchmark run and
// collective (a message-size sweep, or a GPU-count sweep).
struct PublishedGroup {
  std::string name;            // the entries' ids without the tokens that vary ("nccl-a100-1n-mleng-allreduce")
  std::string collective;      // setup.collective
  std::string gpu, intra_node, inter_node;  // hardware.*, as published ("" for a null inter_node)
  int nodes = 1;
  std::string source;          // source.url (source.repo + path when no url)
  std::string algorithm_note;  // setup.algorithm_hint / algorithm_default, when published
  std::string measurement;     // which published column became time_s
  std::string source_key;      // the source's key in the file (S01, S02, S12)
  std::string system;          // hardware.system, when published ("Azure ND96isr H100 v5")
  std::string cpu;             // hardware.cpu, when published (the host CPU: NCCL's per-step network cost)
  std::string not_fitted;      // `not_fitted: why`: validated (always held out), kept out of every fit
  std::vector<Point> points;   // point.where = entry id
};

// Loads every `kind: nccl` entry, in file order. A malformed entry is an InputError at its line. An
// entry's `not_fitted` (a reason) keeps its table out of every fit: `calibrate validate` predicts it
// from the fit to all the others.
// What a run set is kept with each point: setup.nccl_algo / nccl_proto (NCCL_ALGO / NCCL_PROTO, NCCL's
// spellings, comma lists), setup.nccl_version (or "nccl X.Y.Z" in hardware.software).
std::vector<PublishedGroup> load_published(const std::string& path);

// The cluster (as cluster YAML) that describes a published group's hardware, e.g.
// "{preset: dgx-a100-ib200, nodes: 1}"; empty when no preset matches. The system the table names
// (Azure ND H100 v5, GCP a3-megagpu-8g, ...) picks its preset; otherwise the GPU and the fabric do.
std::string published_base_cluster(const PublishedGroup& g);

// The shipped published measurements: <source tree>/validation/data/published_measurements.yaml.
std::string default_published_path();

// "2.18.5" -> 21805 (NCCL's version code without the major's x10000 ambiguity: major*10000 + minor*100 +
// patch), the first such triple in `text`; 0 when there is none.
int parse_nccl_version(std::string_view text);

}  // namespace tagcsim::calibrate
