// The report of `tagcsim validate`: per row, the summaries, the memory check, the buckets that
// show trends, the rule-of-thumb baseline and the fitted parameters (docs/validation.md is this
// text).
#include "scenarios/validation.hpp"
#include "common/quantiles.hpp"
#include "sim/kernel_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tagcsim::scenarios {
namespace {

struct Stats {
  int n = 0;
  double median_abs = 0, mean_abs = 0, p90_abs = 0, max_abs = 0, mean_signed = 0;
  int past_15 = 0;  // rows more than 15% off
  std::string worst;
};

Stats stats(const std::vector<std::pair<double, std::string>>& errors) {
  Stats s;
  s.n = int(errors.size());
  if (!s.n) return s;
  std::vector<double> a;
  for (const auto& [e, id] : errors) {
    a.push_back(std::abs(e));
    s.mean_signed += e / s.n;
    s.mean_abs += std::abs(e) / s.n;
    if (std::abs(e) > s.max_abs) s.max_abs = std::abs(e), s.worst = id;
    s.past_15 += std::abs(e) > 0.15;
  }
  s.median_abs = median(a);
  s.p90_abs = nearest_rank(a, 0.9);
  return s;
}

std::string pct(double e) { return fmt::format("{:+.1f}%", 100 * e); }

}  // namespace

void attach_held_out(ValidationRun& run) {
  for (auto& [key, p] : run.fitted) {
    const bool device = sim::is_device_fit_key(key);
    const std::string name = sim::fit_key_label(key);
    // The rows the fit answers for, and apart those it keeps out (what they test beyond the device's
    // rate, e.g. a mixture of experts: the quote a run prints should not mix the two).
    std::vector<std::pair<double, std::string>> errors, kept_out;
    std::set<std::string> sources;
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
      const auto& r = run.rows[i];
      if (!r.counted || !run.results[i].has_held_out || (device ? r.device : r.family) != name) continue;
      (r.fitted ? errors : kept_out).emplace_back(run.results[i].held_out.error(r.measured_tps), r.id);
      if (r.fitted) sources.insert(r.source);
    }
    if (errors.empty()) continue;
    const Stats s = stats(errors);
    p.held_out = fmt::format("{} row{} of {} source{}, each source held out of the fit: median {:.1f}%, p90 {:.1f}% off",
                             s.n, s.n == 1 ? "" : "s", sources.size(), sources.size() == 1 ? "" : "s",
                             100 * s.median_abs, 100 * s.p90_abs);
    if (!kept_out.empty())
      p.held_out += fmt::format("; {} more counted, kept out of the fit: median {:.1f}% off", kept_out.size(),
                                100 * stats(kept_out).median_abs);
  }
}

namespace {

// Mean signed error per bucket, in the order the keys first appear sorted by `order`.
std::string bucket_table(const ValidationRun& run, bool held_out, bool foundry_only, const char* title,
                         std::string (ValidationRow::*bucket)() const, double (*order)(const ValidationRow&)) {
  std::map<double, std::string> keys;
  std::map<std::string, std::vector<double>> errs;
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& r = run.rows[i];
    const auto& res = run.results[i];
    if (!r.counted || (foundry_only && r.framework != "llm-foundry")) continue;
    if (held_out && !res.has_held_out) continue;
    const auto& p = held_out ? res.held_out : res.shipped;
    const auto k = (r.*bucket)();
    keys.emplace(order(r), k);
    errs[k].push_back(p.error(r.measured_tps));
  }
  if (errs.empty()) return "";
  std::string head = fmt::format("| {} |", title), sep = "|---|", rows = "| mean signed error |", n = "| rows |";
  std::set<std::string> done;
  for (const auto& [o, k] : keys) {
    if (!done.insert(k).second) continue;
    double m = 0;
    for (double e : errs[k]) m += e / double(errs[k].size());
    head += fmt::format(" {} |", k);
    sep += "---|";
    rows += fmt::format(" {} |", pct(m));
    n += fmt::format(" {} |", errs[k].size());
  }
  return head + "\n" + sep + "\n" + rows + "\n" + n + "\n";
}

double seq_order(const ValidationRow& r) { return r.seq; }
double size_order(const ValidationRow& r) { return r.params; }
double gpus_order(const ValidationRow& r) { return r.gpus; }

std::string summary_line(const char* what, const Stats& s) {
  if (!s.n) return "";
  return fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {:.1f}% ({}) | {} | {} |\n", what, s.n,
                     100 * s.median_abs, 100 * s.mean_abs, 100 * s.p90_abs, 100 * s.max_abs, s.worst, s.past_15,
                     pct(s.mean_signed));
}

// The rule of thumb the model has to beat: one MFU per device family, the geometric mean of the
// other sources' measured MFU (ours, as the kernels run), predicting each source held out the same
// way as the model. A row's measured MFU is the prediction's scaled by measured / predicted.
Stats constant_mfu_baseline(const ValidationRun& run) {
  struct Row {
    const ValidationRow* row;
    double mfu;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& r = run.rows[i];
    const auto& p = run.results[i].shipped;
    if (r.counted && p.tps > 0 && p.mfu > 0) rows.push_back({&r, p.mfu * r.measured_tps / p.tps});
  }
  std::vector<std::pair<double, std::string>> errors;
  for (const auto& x : rows) {
    double logs = 0;
    int n = 0;
    for (const auto& o : rows)
      if (o.row->family == x.row->family && o.row->source != x.row->source) logs += std::log(o.mfu), ++n;
    if (n) errors.emplace_back(std::exp(logs / n) / x.mfu - 1, x.row->id);
  }
  return stats(errors);
}

// Every published row ran, so the memory estimate should say it fits: the rows it marks, counted.
std::string memory_summary(const ValidationRun& run) {
  std::vector<std::string> oom, pressure;
  int counted = 0;
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    if (!run.rows[i].counted) continue;
    ++counted;
    const auto& p = run.results[i].shipped;
    if (!p.fits) oom.push_back(run.rows[i].id);
    else if (p.under_pressure) pressure.push_back(run.rows[i].id);
  }
  auto list = [](const std::vector<std::string>& ids) {
    std::string t;
    for (const auto& id : ids) t += (t.empty() ? "" : ", ") + id;
    return t.empty() ? std::string("none") : t;
  };
  std::string out = fmt::format(
      "\nMemory (every published row ran): {} of {} counted rows do not fit by tagcsim's estimate "
      "(`!`: {}); {} fit only with the caching allocator giving cached blocks back during the step (`~`).\n",
      oom.size(), counted, list(oom), pressure.size());
  // torchtitan logs its peak memory as torch.cuda's max reserved: the allocator's, without the
  // CUDA context and NCCL's buffers, so it is compared with the predicted reserved memory. Our own
  // steps also give max allocated, the live tensors alone, which the memory walk predicts directly;
  // Lightning's benchmark gives that alone.
  std::string table;
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& r = run.rows[i];
    if (r.published_reserved_gib <= 0 && r.published_allocated_gib <= 0) continue;
    const auto& p = run.results[i].shipped;
    const std::string reserved =
        r.published_reserved_gib > 0
            ? fmt::format("{:.1f} | {:.1f} | {}", r.published_reserved_gib, p.reserved_gib,
                          pct(p.reserved_gib / r.published_reserved_gib - 1))
            : fmt::format("- | {:.1f} | -", p.reserved_gib);
    const std::string allocated =
        r.published_allocated_gib > 0
            ? fmt::format("{:.1f} | {}", r.published_allocated_gib, pct(p.allocated_gib / r.published_allocated_gib - 1))
            : "- | -";
    table += fmt::format("| {} | {} | {:.1f} | {} |\n", r.id, reserved, p.allocated_gib, allocated);
  }
  if (!table.empty())
    out += "\nPeak memory where it is published (torchtitan's and our steps' max reserved; our steps' and Lightning's "
           "benchmark's max allocated), GiB, against the predicted reserved and allocated memory:\n\n"
           "| id | published reserved | predicted reserved | error | predicted allocated | published allocated | "
           "error |\n|---|---|---|---|---|---|---|\n" +
           table;
  return out;
}

}  // namespace

std::string format_validation(const ValidationRun& run) {
  const bool loso = std::any_of(run.results.begin(), run.results.end(), [](const auto& r) { return r.has_held_out; });
  std::string out;
  out += fmt::format("| id | src | model | GPUs | seq | measured tok/s/GPU | predicted | error |{} MFU published | "
                     "MFU ours | MFU Megatron | peak mem |\n",
                     loso ? " held out | error |" : "");
  out += fmt::format("|---|---|---|---|---|---|---|---|{}---|---|---|---|\n", loso ? "---|---|" : "");
  for (std::size_t i = 0; i < run.rows.size(); ++i) {
    const auto& r = run.rows[i];
    const auto& res = run.results[i];
    const auto& p = res.shipped;
    std::string held;
    if (loso)
      held = res.has_held_out ? fmt::format(" {:.0f} | {} |", res.held_out.tps, pct(res.held_out.error(r.measured_tps)))
                              : " - | - |";
    out += fmt::format("| {}{} | {} | {} | {} | {} | {:.0f} | {:.0f} | {} |{} {} | {:.3f} | {:.3f} | {:.1f} of {:.1f} "
                       "GiB{} |\n",
                       r.id,
                       !r.counted  ? " (not counted: " + r.note + ")"
                       : !r.fitted ? " (not fitted: " + r.not_fitted_note + ")"
                                   : "",
                       r.source, r.model, r.gpus, r.seq,
                       r.measured_tps, p.tps, pct(p.error(r.measured_tps)), held,
                       r.published_mfu > 0 ? fmt::format("{:.3f}", r.published_mfu) : "-", p.mfu, p.mfu_megatron,
                       p.peak_gib, p.capacity_gib, p.memory_mark());
  }

  auto collect = [&](bool held_out, auto pred) {
    std::vector<std::pair<double, std::string>> e;
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
      const auto& r = run.rows[i];
      const auto& res = run.results[i];
      if (!r.counted || !pred(r) || (held_out && !res.has_held_out)) continue;
      e.emplace_back((held_out ? res.held_out : res.shipped).error(r.measured_tps), r.id);
    }
    return stats(e);
  };
  auto any = [](const ValidationRow&) { return true; };
  out += "\n| tokens/s/GPU | rows | median abs error | mean abs error | 90% of rows within | max abs error | rows past 15% "
         "| mean signed |\n"
         "|---|---|---|---|---|---|---|---|\n";
  out += summary_line("fitted on all rows (in-sample)", collect(false, any));
  if (loso) {
    out += summary_line("leave one source out (held out)", collect(true, any));
    // A family fitted from fewer than two sources borrows a fitted family's tensor scale (its
    // predecessor's): the line below says what the model does where it has been fitted.
    auto fitted = [](const ValidationRow& r) { return !sim::fitted_parameters(r.family).basis.empty(); };
    const bool unfitted = std::any_of(run.rows.begin(), run.rows.end(),
                                      [&](const ValidationRow& r) { return r.counted && !fitted(r); });
    if (unfitted) out += summary_line("held out, device families with a fit", collect(true, fitted));
    out += summary_line("rule of thumb: one MFU per device family, held out the same way", constant_mfu_baseline(run));
  }
  std::set<std::string> sources;
  for (const auto& r : run.rows) sources.insert(r.source);
  for (const auto& s : sources) {
    auto of = [&](const ValidationRow& r) { return r.source == s; };
    const auto label = fmt::format("{} in-sample", s);
    out += summary_line(label.c_str(), collect(false, of));
    if (loso) {
      const auto l2 = fmt::format("{} held out", s);
      out += summary_line(l2.c_str(), collect(true, of));
    }
  }
  out += memory_summary(run);
  for (bool held : {false, true}) {
    if (held && !loso) continue;
    const char* which = held ? "held out (leave one source out)" : "in-sample";
    for (bool foundry : {true, false}) {
      const auto seq = bucket_table(run, held, foundry, "sequence", &ValidationRow::seq_bucket, seq_order);
      const auto size = bucket_table(run, held, foundry, "model size", &ValidationRow::size_bucket, size_order);
      const auto gpus = bucket_table(run, held, foundry, "GPUs", &ValidationRow::gpus_bucket, gpus_order);
      if (seq.empty() && size.empty() && gpus.empty()) continue;  // no such rows (a tree of one's own runs)
      out += fmt::format("\n{} rows, {}, mean signed error by bucket:\n", foundry ? "LLM Foundry" : "All", which);
      out += fmt::format("\n{}\n{}\n{}", seq, size, gpus);
    }
  }
  out += format_what_if_pairs(run.pairs);
  out += format_replicate_rows(run.replicates);
  // The families, then the devices with a fit of their own (the others take their family's).
  std::set<std::string> families, devices;
  for (const auto& r : run.rows) {
    families.insert(r.family);
    if (!r.device.empty() && (run.fitted.count(sim::device_fit_key(r.device)) || sim::has_device_fit(r.device)))
      devices.insert(r.device);
  }
  out += "\n| family or device | tensor_scale | memory_scale | basis |\n|---|---|---|---|\n";
  auto line = [&](const std::string& label, const std::string& key, const sim::FittedParameters& shipped) {
    const auto p = run.fitted.count(key) ? run.fitted.at(key) : shipped;
    out += fmt::format("| {} | {:.3f} | {:.3f} | {} |\n", label, p.tensor_scale, p.memory_scale,
                       p.basis.empty() ? "not fitted: the scales of " + p.borrowed : p.basis);
  };
  for (const auto& f : families) line(f, f, sim::fitted_parameters(f));
  for (const auto& d : devices) line("device " + d, sim::device_fit_key(d), sim::fitted_parameters(d, ""));
  if (!run.fold_fits.empty()) {
    out += "\n| held-out source | fitted without it |\n|---|---|\n";
    for (const auto& [s, fits] : run.fold_fits) {
      std::string t;
      for (const auto& [f, p] : fits)
        t += fmt::format("{}{}: {:.3f} / {:.3f}", t.empty() ? "" : "; ", sim::fit_key_label(f), p.tensor_scale,
                         p.memory_scale);
      out += fmt::format("| {} | {} |\n", s, t);
    }
  }
  return out;
}

}  // namespace tagcsim::scenarios
