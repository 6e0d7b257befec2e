// The stored quality table and the estimate the simulator asks for.
#include "kernels/quality.hpp"

#include "common/input.hpp"
#include "kernels/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace tagcsim::kernels {
namespace {

constexpr const char* kColumns[] = {"set",       "encoding",      "ranks",          "sparsity",           "overlap",
                                    "ratio",     "blocks",        "rows",           "union_density",      "load",
                                    "flags_lost", "flags_invented", "recovered_fraction", "relative_l2_error",
                                    "decode_rounds"};
constexpr std::size_t kNumColumns = std::size(kColumns);

struct Metrics {
  double recovered = 1, l2 = 0, rounds = 0;
};

Metrics metrics(const QualityPoint& p) { return {p.recovered_fraction, p.relative_l2_error, p.decode_rounds}; }
Metrics mix(const Metrics& a, const Metrics& b, double f) {
  return {a.recovered + f * (b.recovered - a.recovered), a.l2 + f * (b.l2 - a.l2), a.rounds + f * (b.rounds - a.rounds)};
}

// The peeling curve of the exact encodings at `rows`, linear in load, clamped
// to the measured range; blended between measured row counts in log(rows).
Metrics curve_at(const QualityTable& t, double rows, double load, std::string& basis) {
  std::map<std::size_t, std::vector<const QualityPoint*>> curves;
  for (const auto& p : t.points)
    if (p.set == "curve" && !is_lossy(p.encoding)) curves[p.rows].push_back(&p);
  if (curves.empty()) throw InputError(t.source + ": the quality table holds no peeling curve (set 'curve')");
  auto along = [&](const std::vector<const QualityPoint*>& c) {
    auto pts = c;
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->load < b->load; });
    if (load <= pts.front()->load) return metrics(*pts.front());
    if (load >= pts.back()->load) return metrics(*pts.back());
    auto hi = std::find_if(pts.begin(), pts.end(), [&](auto* p) { return p->load >= load; });
    auto lo = hi - 1;
    return mix(metrics(**lo), metrics(**hi), (load - (*lo)->load) / ((*hi)->load - (*lo)->load));
  };
  const std::size_t rmin = curves.begin()->first, rmax = curves.rbegin()->first;
  if (rows <= 0 || rows >= double(rmax)) {
    basis = fmt::format("peeling curve measured at {} rows", rmax);
    return along(curves.rbegin()->second);
  }
  if (rows <= double(rmin)) {
    basis = fmt::format("peeling curve measured at {} rows (shard has {:.0f})", rmin, rows);
    return along(curves.begin()->second);
  }
  auto hi = curves.lower_bound(std::size_t(std::ceil(rows)));
  auto lo = std::prev(hi);
  if (hi->first == std::size_t(rows)) lo = hi;
  double f = lo == hi ? 0 : std::log(rows / double(lo->first)) / std::log(double(hi->first) / double(lo->first));
  basis = fmt::format("peeling curves measured at {} and {} rows, for {:.0f}", lo->first, hi->first, rows);
  return mix(along(lo->second), along(hi->second), f);
}

// Multilinear interpolation over the measured grid (log ranks, sparsity,
// overlap, log ratio) of one encoding, clamped to the grid's range.
Metrics grid_at(const QualityTable& t, IndexEncoding enc, const QualityQuery& q, std::string& clamped) {
  std::map<std::tuple<int, double, double, double>, const QualityPoint*> at;
  std::array<std::vector<double>, 4> axes;
  for (const auto& p : t.points) {
    if (p.set != "grid" || p.encoding != enc) continue;
    at[{p.ranks, p.sparsity, p.overlap, p.ratio}] = &p;
    const double v[4] = {double(p.ranks), p.sparsity, p.overlap, p.ratio};
    for (int d = 0; d < 4; ++d)
      if (std::find(axes[d].begin(), axes[d].end(), v[d]) == axes[d].end()) axes[d].push_back(v[d]);
  }
  if (at.empty()) throw InputError(fmt::format("{}: the quality table has no grid points for {}", t.source, to_string(enc)));
  const double want[4] = {double(q.ranks), q.sparsity, q.overlap, q.ratio};
  const bool logscale[4] = {true, false, false, true};
  const char* names[4] = {"ranks", "sparsity", "overlap", "ratio"};
  std::array<std::size_t, 4> lo{}, hi{};
  std::array<double, 4> f{};
  for (int d = 0; d < 4; ++d) {
    auto& a = axes[d];
    std::sort(a.begin(), a.end());
    double x = want[d];
    if (x < a.front() || x > a.back()) {
      clamped += fmt::format("{}{} clamped to [{:g}, {:g}]", clamped.empty() ? "" : ", ", names[d], a.front(), a.back());
      x = std::clamp(x, a.front(), a.back());
    }
    std::size_t j = std::size_t(std::upper_bound(a.begin(), a.end(), x) - a.begin());
    hi[d] = std::min(j, a.size() - 1);
    lo[d] = j == 0 ? 0 : j - 1;
    if (a[lo[d]] == x || lo[d] == hi[d]) {
      hi[d] = lo[d];
      f[d] = 0;
    } else {
      auto tr = [&](double v) { return logscale[d] ? std::log(v) : v; };
      f[d] = (tr(x) - tr(a[lo[d]])) / (tr(a[hi[d]]) - tr(a[lo[d]]));
    }
  }
  Metrics m{0, 0, 0};
  for (int corner = 0; corner < 16; ++corner) {
    double w = 1;
    double key[4];
    for (int d = 0; d < 4; ++d) {
      bool up = (corner >> d) & 1;
      w *= up ? f[d] : 1 - f[d];
      key[d] = axes[d][up ? hi[d] : lo[d]];
    }
    if (w == 0) continue;
    auto it = at.find({int(key[0]), key[1], key[2], key[3]});
    if (it == at.end())
      throw InputError(fmt::format("{}: the {} grid is incomplete (no point at ranks {:g}, sparsity {:g}, overlap {:g}, "
                                   "ratio {:g})", t.source, to_string(enc), key[0], key[1], key[2], key[3]));
    Metrics c = metrics(*it->second);
    m.recovered += w * c.recovered;
    m.l2 += w * c.l2;
    m.rounds += w * c.rounds;
  }
  return m;
}

double number(const std::string& cell, const std::string& where, const char* column) {
  try {
    std::size_t used = 0;
    double v = std::stod(cell, &used);
    if (used == cell.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{}: column {}: expected a number, got '{}'", where, column, cell));
}

}  // namespace

double union_density(int ranks, double sparsity, double overlap) {
  const double d = 1 - sparsity, shared = d * overlap;
  if (shared >= 1) return 1;
  const double p = d * (1 - overlap) / (1 - shared);
  return shared + (1 - shared) * (1 - std::pow(1 - p, ranks));
}

QualityTable parse_quality_csv(const std::string& text, const std::string& source) {
  QualityTable t;
  t.source = source;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (auto pos = line.find("command:"); pos != std::string::npos)
        t.source = source + " (" + line.substr(pos) + ")";
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    const std::string where = fmt::format("{}:{}", source, lineno);
    if (!header) {
      std::vector<std::string> want(std::begin(kColumns), std::end(kColumns));
      if (cells != want)
        throw InputError(fmt::format("{}: expected the header '{}'", where, fmt::join(want, ",")));
      header = true;
      continue;
    }
    if (cells.size() != kNumColumns)
      throw InputError(fmt::format("{}: expected {} columns, got {}", where, kNumColumns, cells.size()));
    QualityPoint p;
    p.set = cells[0];
    if (p.set != "curve" && p.set != "grid")
      throw InputError(fmt::format("{}: column set: expected curve or grid, got '{}'", where, p.set));
    p.encoding = parse_index_encoding(cells[1], where + ": column encoding");
    double v[kNumColumns];
    for (std::size_t c = 2; c < kNumColumns; ++c) v[c] = number(cells[c], where, kColumns[c]);
    p.ranks = int(v[2]);
    p.sparsity = v[3];
    p.overlap = v[4];
    p.ratio = v[5];
    p.blocks = std::size_t(v[6]);
    p.rows = std::size_t(v[7]);
    p.union_density = v[8];
    p.load = v[9];
    p.flags_lost = v[10];
    p.flags_invented = v[11];
    p.recovered_fraction = v[12];
    p.relative_l2_error = v[13];
    p.decode_rounds = v[14];
    t.points.push_back(p);
  }
  if (!header) throw InputError(source + ": empty quality table (no header line)");
  return t;
}

QualityTable load_quality_table(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(fmt::format("{}: cannot read the quality table (set TAGCSIM_DATA_DIR, or run "
                                       "`tagcsim kernels quality --out {}`)", path, path));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_quality_csv(ss.str(), path);
}

std::string quality_csv(const std::vector<QualityPoint>& pts, const std::string& header_comment) {
  std::string s;
  std::istringstream hc(header_comment);
  for (std::string l; std::getline(hc, l);) s += "# " + l + "\n";
  s += fmt::format("{}\n", fmt::join(std::begin(kColumns), std::end(kColumns), ","));
  for (const auto& p : pts)
    s += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", p.set,
                     to_string(p.encoding), p.ranks, p.sparsity, p.overlap, p.ratio, p.blocks, p.rows, p.union_density,
                     p.load, p.flags_lost, p.flags_invented, p.recovered_fraction, p.relative_l2_error, p.decode_rounds);
  return s;
}

QualityEstimate estimate_quality(const QualityQuery& q, const QualityTable& t) {
  if (!(q.sparsity >= 0 && q.sparsity < 1))
    throw InputError(fmt::format("quality estimate: sparsity must be in [0, 1), got {}", q.sparsity));
  if (!(q.overlap >= 0 && q.overlap <= 1))
    throw InputError(fmt::format("quality estimate: overlap must be in [0, 1], got {}", q.overlap));
  check_index_ranks(q.encoding, q.ranks);
  const SketchShape shape = sketch_shape(std::size_t(std::max(0.0, q.shard_elements)), q.ratio);  // checks ratio
  QualityEstimate e;
  e.load = union_density(q.ranks, q.sparsity, q.overlap) * q.ratio;
  const double rows = q.shard_elements > 0 ? double(shape.rows) : 0.0;
  std::string curve_basis;
  Metrics m = curve_at(t, rows, e.load, curve_basis);
  if (!is_lossy(q.encoding)) {
    e.basis = fmt::format("{}: exact OR of the flags; load {:.3f} on the {} ({})", to_string(q.encoding), e.load,
                          curve_basis, t.source);
  } else {
    // The 1-bit SUM's flag damage, measured in the grid as the gap to the
    // exact encodings at the same point, added to the curve's peeling loss.
    std::string clamped;
    Metrics lossy = grid_at(t, IndexEncoding::Bit1Sum, q, clamped);
    Metrics exact = grid_at(t, IndexEncoding::Bit1Or, q, clamped);
    const double keep = exact.recovered > 0 ? std::clamp(lossy.recovered / exact.recovered, 0.0, 1.0) : 0.0;
    m.recovered *= keep;
    m.l2 = std::sqrt(m.l2 * m.l2 + std::max(0.0, lossy.l2 * lossy.l2 - exact.l2 * exact.l2));
    e.basis = fmt::format(
        "1bit-sum (lossy): load {:.3f} on the {}, times the flag damage interpolated in the measured grid{} ({})",
        e.load, curve_basis, clamped.empty() ? "" : " (" + clamped + ")", t.source);
  }
  e.recovered_fraction = std::clamp(m.recovered, 0.0, 1.0);
  e.relative_l2_error = std::max(0.0, m.l2);
  e.decode_rounds = m.rounds;
  return e;
}

QualityEstimate estimate_quality(const QualityQuery& q) {
  static std::once_flag once;
  static QualityTable table;
  static std::string error;
  std::call_once(once, [] {
    try {
      table = load_quality_table(data_dir() + "/tagc-quality.csv");
    } catch (const InputError& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw InputError(error);
  return estimate_quality(q, table);
}

std::vector<PeelingThreshold> peeling_thresholds(const QualityTable& t) {
  std::map<std::size_t, std::vector<const QualityPoint*>> curves;
  for (const auto& p : t.points)
    if (p.set == "curve" && !is_lossy(p.encoding)) curves[p.rows].push_back(&p);
  std::vector<PeelingThreshold> out;
  for (auto& [rows, pts] : curves) {
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->load < b->load; });
    PeelingThreshold th;
    th.rows = rows;
    th.half_load = pts.back()->load;
    for (std::size_t i = 1; i < pts.size(); ++i) {
      if (pts[i]->recovered_fraction < 0.5 && pts[i - 1]->recovered_fraction >= 0.5) {
        const double a = pts[i - 1]->recovered_fraction, b = pts[i]->recovered_fraction;
        th.half_load = pts[i - 1]->load + (a - 0.5) / (a - b) * (pts[i]->load - pts[i - 1]->load);
        break;
      }
    }
    for (auto* p : pts) {
      if (p->recovered_fraction < 0.99) break;
      th.full_load = p->load;
    }
    out.push_back(th);
  }
  return out;
}

}  // namespace tagcsim::kernels
