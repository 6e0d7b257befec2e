// Leave one source out: one fit per source, each predicting the source it left out. The folds
// share nothing but their starting point, so they run side by side, each in a child process
// (common/child_process.hpp: SimGrid allows one engine per process). A child sends its fits and
// predictions back bit for bit; the parent reads the children in the sources' order, so the
// result does not depend on how many ran at once.
#include "scenarios/validation_folds.hpp"

#include "common/child_process.hpp"

#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>

namespace tagcsim::scenarios {
namespace {

Fold run_fold(const std::vector<ValidationRow>& rows, const std::string& source, const FamilyFits& start) {
  std::vector<std::size_t> train;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].source != source) train.push_back(i);
  for (const auto& [fam, p] : start) sim::override_fitted_parameters(fam, p);  // warm start
  Fold f;
  f.fits = fit(rows, train);
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].source == source) f.held_out.emplace_back(i, predict(rows[i]));
  return f;
}

// A fold as bytes: counts, then raw doubles and length-prefixed strings (same machine, same build).
void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
void put(std::string& out, double v) { put(out, &v, sizeof v); }
void put(std::string& out, const std::string& s) {
  put(out, double(s.size()));
  put(out, s.data(), s.size());
}

std::string encode(const Fold& f) {
  std::string out;
  put(out, double(f.fits.size()));
  for (const auto& [fam, p] : f.fits) {
    put(out, fam);
    put(out, p.tensor_scale), put(out, p.memory_scale);
    put(out, p.basis), put(out, p.borrowed), put(out, p.held_out);
  }
  put(out, double(f.held_out.size()));
  for (const auto& [i, p] : f.held_out) {
    put(out, double(i));
    for (double v : {p.tps, p.mfu, p.mfu_megatron, p.step_s, p.exposed_comm_s, p.peak_gib, p.capacity_gib,
                     p.reserved_gib, p.allocated_gib, double(p.fits), double(p.under_pressure)})
      put(out, v);
  }
  return out;
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  double number() {
    double v;
    take(&v, sizeof v);
    return v;
  }
  std::string text() {
    std::string t(std::size_t(number()), '\0');
    take(t.data(), t.size());
    return t;
  }

 private:
  void take(void* p, std::size_t n) {
    if (at_ + n > s_.size()) throw std::runtime_error("validate --loso: a fold's result is cut short");
    std::memcpy(p, s_.data() + at_, n);
    at_ += n;
  }
  const std::string& s_;
  std::size_t at_ = 0;
};

Fold decode(const std::string& bytes) {
  Reader r(bytes);
  Fold f;
  for (auto n = std::size_t(r.number()); n > 0; --n) {
    const std::string fam = r.text();
    sim::FittedParameters p;
    p.tensor_scale = r.number();
    p.memory_scale = r.number();
    p.basis = r.text();
    p.borrowed = r.text();
    p.held_out = r.text();
    f.fits[fam] = p;
  }
  for (auto n = std::size_t(r.number()); n > 0; --n) {
    const auto i = std::size_t(r.number());
    Prediction p;
    for (double* v : {&p.tps, &p.mfu, &p.mfu_megatron, &p.step_s, &p.exposed_comm_s, &p.peak_gib, &p.capacity_gib,
                      &p.reserved_gib, &p.allocated_gib})
      *v = r.number();
    p.fits = r.number() != 0;
    p.under_pressure = r.number() != 0;
    f.held_out.emplace_back(i, p);
  }
  return f;
}

}  // namespace

std::map<std::string, Fold> run_folds(const std::vector<ValidationRow>& rows, const std::set<std::string>& sources,
                                      const FamilyFits& start, int jobs) {
  std::map<std::string, Fold> out;
  const int n = jobs > 0 ? jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  if (n == 1) {
    for (const auto& s : sources) out[s] = run_fold(rows, s, start);
  } else {
    // A window of `n` children; reading them in order cannot deadlock: a child only ever waits
    // for the parent to read its own pipe, and every child before it finishes on its own.
    std::deque<std::pair<std::string, ChildProcess>> running;
    auto next = sources.begin();
    while (next != sources.end() || !running.empty()) {
      while (next != sources.end() && int(running.size()) < n) {
        const std::string& source = *next;
        running.emplace_back(source,
                             start_child([&] { return encode(run_fold(rows, source, start)); }, "validate --loso"));
        ++next;
      }
      auto [source, child] = running.front();
      running.pop_front();
      out[source] = decode(finish_child(child, "validate --loso: the fold without " + source));
    }
  }
  for (const auto& [fam, p] : start) sim::override_fitted_parameters(fam, p);
  return out;
}

}  // namespace tagcsim::scenarios
