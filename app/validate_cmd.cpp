// tagcsim validate: predicted against published FSDP throughput, for every shipped row.
#include "app/commands.hpp"
#include "scenarios/validation.hpp"
#include "sim/kernel_profile.hpp"

#include <fmt/format.h>

#include <fstream>
#include <memory>

namespace tagcsim::app {
namespace {

struct ValidateOptions {
  bool loso = false;
  bool fit = false;
  bool write = false;
  std::string only;
  std::string out;
  std::string root;
  std::string scenario;
};

int run(const ValidateOptions& o) {
  if (o.write && !o.fit) throw InputError("--write: only with --fit (it writes the fitted parameters)");
  auto rows = scenarios::validation_rows(o.root.empty() ? scenarios::default_validation_root() : o.root);
  if (!o.scenario.empty()) {
    for (const auto& r : rows)
      if (r.id == o.scenario) {
        fmt::print("# {} (from {})\n{}", r.id, r.scenario_file, r.scenario);
        return 0;
      }
    throw InputError(fmt::format("--scenario: no validation row '{}'", o.scenario));
  }
  scenarios::ValidationOptions vo;
  vo.leave_one_source_out = o.loso;
  vo.refit = o.fit;
  vo.only = o.only;
  const auto run = scenarios::validate(std::move(rows), vo);
  std::string text = scenarios::format_validation(run);
  if (o.out.empty()) {
    fmt::print("{}", text);
  } else {
    std::ofstream f(o.out);
    if (!f || !(f << text)) throw InputError(fmt::format("--out: cannot write '{}'", o.out));
  }
  if (o.write) {
    const auto path = sim::fit_file_path();
    std::ofstream f(path);
    if (!f || !(f << scenarios::fit_file_text(run.fitted, "tagcsim validate --fit --write")))
      throw InputError(fmt::format("--write: cannot write '{}'", path));
    fmt::print(stderr, "wrote {}\n", path);
  }
  return 0;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand("validate", "Predict every published FSDP throughput row shipped in validation/data "
                                             "and compare (docs/validation.md)");
  cmd->add_flag("--loso", o->loso, "Also leave one source out: fit without each source, predict it");
  cmd->add_flag("--fit", o->fit, "Refit the device families' parameters on every row first");
  cmd->add_flag("--write", o->write, "With --fit: write them to calibrate/profiles/fit-training.yaml");
  cmd->add_option("--only", o->only, "Only the rows whose id matches this regular expression");
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  cmd->add_option("--scenario", o->scenario, "Print the scenario of one row (run it with `tagcsim run`)");
  cmd->add_option("--root", o->root, "Source tree holding validation/data and scenarios/validation");
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace tagcsim::app
