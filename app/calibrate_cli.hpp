// What `tagcsim calibrate`'s subcommands share (app/calibrate_cmd.cpp, app/calibrate_validate.cpp):
// the options every subcommand parses into, and the published tables as the commands read them.
#pragma once

#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"

#include <string>
#include <vector>

namespace tagcsim::app {

struct Options {
  std::vector<std::string> files;
  std::string cluster;
  std::string out;
  std::string transport_out;
  std::string transport_dir;
  std::string op;
  int jobs = 0;  // validate: folds fitted at once (0: one per hardware thread)
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<std::string> hold;
  std::string group;
  bool all = false;
  bool priors = false;
  std::string data;
  std::string loo = "source";
  std::string held_out_out;  // validate: where to write the held-out errors per connection
  bool held_out = false;     // nccl-tests: also predict each log from a fit to the others
};

// The published tables file: --data, else the shipped one.
std::string data_path(const Options& o);
// Writes `text` to `path`; an InputError naming `flag` when it cannot.
void write_file(const std::string& path, const std::string& text, const char* flag);
// A published table's provenance, one line each, as the reports print it.
std::vector<std::string> describe(const calibrate::PublishedGroup& g);
// A published table with its base cluster (or `cluster_arg`), at the priors if asked, as samples;
// empty when no preset describes it.
std::vector<calibrate::Sample> samples_of(const calibrate::PublishedGroup& g, const std::string& cluster_arg,
                                          bool priors);

// `tagcsim calibrate validate`: the model against every published table, presets and held out.
int run_validate(const Options& o);

}  // namespace tagcsim::app
