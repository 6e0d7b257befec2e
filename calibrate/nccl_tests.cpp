// nccl-tests stdout -> Points. The published YAML loader is in published.cpp.
#include "calibrate/nccl_tests.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace tagcsim::calibrate {
namespace {

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<double> number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string copy(s);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<long long> integer(std::string_view s) {
  long long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// nccl-tests binary names without "_perf"; the spelling-free variants appear in log file names.
constexpr std::pair<std::string_view, std::string_view> kOpNames[] = {
    {"reduce_scatter", "reduce_scatter"}, {"reducescatter", "reduce_scatter"}, {"all_reduce", "all_reduce"},
    {"allreduce", "all_reduce"},          {"all_gather", "all_gather"},         {"allgather", "all_gather"},
    {"alltoall", "alltoall"},             {"sendrecv", "sendrecv"},             {"broadcast", "broadcast"},
    {"hypercube", "hypercube"},           {"gather", "gather"},                 {"scatter", "scatter"},
    {"reduce", "reduce"},
};

// The first known collective named in `text` (longest names are listed first).
std::string op_in(std::string_view text) {
  for (auto [needle, name] : kOpNames)
    if (text.find(needle) != std::string_view::npos) return std::string(name);
  return {};
}

// A whitespace-split line whose columns after the first have a result row's shape: at least 11 in
// all, the last 8 the two placements' time, algbw, busbw and #wrong (numbers, or N/A).
bool looks_like_row(const std::vector<std::string_view>& tok) {
  // A count, then a type word: NCCL INFO lines end in numbers too ("Channel 00/16 :  0 7 6 5 ...").
  if (tok.size() < 11 || !integer(tok[1]) || number(tok[2])) return false;
  for (std::size_t j = tok.size() - 8; j < tok.size(); ++j)
    if (tok[j] != "N/A" && !number(tok[j])) return false;
  return true;
}

std::optional<sim::CollectiveOp> model_op(const std::string& name) {
  for (auto op : {sim::CollectiveOp::AllGather, sim::CollectiveOp::ReduceScatter, sim::CollectiveOp::AllReduce,
                  sim::CollectiveOp::Reduce, sim::CollectiveOp::Broadcast, sim::CollectiveOp::AllToAll})
    if (name == sim::to_string(op)) return op;
  return std::nullopt;
}

// What the header of the current run told us.
struct RunHeader {
  std::string op;                    // from "# Collective test starting: all_reduce_perf"
  int op_line = 0;
  std::vector<std::string> hosts;    // one per "#  Rank N ... on HOST" line
  bool wrong_is_count = true;        // "#wrong" column (counts) vs old "error" column (max abs error)
  int gpus_per_thread = 1;           // "# nThread 1 nGpus 8 ...": one thread launches 8 GPUs' kernels
  int nccl_version = 0;              // "nccl-library=21903" (nccl-tests >= 2.13) or "NCCL version 2.19.3+cuda12.3"
};

// The version a line states, 0 when none: "nccl-library=21903" or "NCCL version 2.19.3+...".
int version_in(std::string_view line) {
  if (auto at = line.find("nccl-library="); at != std::string_view::npos) {
    const int code = std::atoi(std::string(line.substr(at + 13, 8)).c_str());
    return code >= 20000 && code < 100000 ? code : 0;
  }
  if (auto at = line.find("NCCL version "); at != std::string_view::npos) return parse_nccl_version(line.substr(at + 13));
  return 0;
}

void read_comment(std::string_view line, RunHeader& h, int lineno) {
  const auto tok = split_ws(line.substr(1));
  if (const int v = version_in(line)) h.nccl_version = v;
  if (line.find("Collective test starting:") != std::string_view::npos) {
    const int version = h.nccl_version;  // the version line comes first in nccl-tests >= 2.13
    h = RunHeader{};  // a new run (logs of several runs may be concatenated)
    h.nccl_version = version;
    h.op = op_in(line.substr(line.find(':') + 1));
    h.op_line = lineno;
  } else if (!tok.empty() && tok[0] == "nThread") {
    h.hosts.clear();  // old versions start a run here
    auto g = std::find(tok.begin(), tok.end(), "nGpus");
    if (g != tok.end() && g + 1 != tok.end()) h.gpus_per_thread = std::max(1, std::atoi(std::string(*(g + 1)).c_str()));
  } else if (!tok.empty() && tok[0] == "Rank") {
    auto on = std::find(tok.begin(), tok.end(), "on");
    if (on != tok.end() && on + 1 != tok.end()) h.hosts.emplace_back(*(on + 1));
  } else if (std::find(tok.begin(), tok.end(), "busbw") != tok.end()) {
    h.wrong_is_count = std::find(tok.begin(), tok.end(), "#wrong") != tok.end();
  }
}

// nodes x GPUs per node of the current run.
std::pair<int, int> layout(const RunHeader& h, const ParseOptions& o, const std::string& where) {
  if (o.nodes > 0 && o.gpus_per_node > 0) return {o.nodes, o.gpus_per_node};
  const int ranks = static_cast<int>(h.hosts.size());
  if (ranks == 0)
    throw InputError(fmt::format("{}: no '#  Rank N ... on HOST' header lines before this row, so the number of "
                                 "ranks is unknown; pass --nodes and --gpus-per-node",
                                 where));
  std::map<std::string, int> per_host;
  for (const auto& host : h.hosts) ++per_host[host];
  if (o.nodes > 0 || o.gpus_per_node > 0) {
    const int d = o.nodes > 0 ? o.nodes : o.gpus_per_node;
    if (ranks % d != 0)
      throw InputError(fmt::format("{}: {} ranks do not divide into {} {}", where, ranks, d,
                                   o.nodes > 0 ? "nodes" : "GPUs per node"));
    return o.nodes > 0 ? std::pair{d, ranks / d} : std::pair{ranks / d, d};
  }
  const int nodes = static_cast<int>(per_host.size());
  for (const auto& [host, n] : per_host)
    if (n * nodes != ranks)
      throw InputError(fmt::format("{}: the header lists {} ranks on host '{}' but {} ranks on {} hosts; the model "
                                   "needs the same number of GPUs on every node (or pass --nodes and --gpus-per-node)",
                                   where, n, host, ranks, nodes));
  return {nodes, ranks / nodes};
}

// What a launcher writes into each rank's output: OpenMPI's `mpirun --tag-output` tags every write
// ("[1,0]<stdout>:", so nccl-tests' rows, printed in pieces, carry it mid-line too) and Slurm's
// `srun --label` starts each line with the rank ("0: "). Logs posted from multi-node runs carry them.
std::string_view without_launcher_tags(std::string_view line, std::string& buffer) {
  auto digits = [](std::string_view t, std::size_t from) {
    while (from < t.size() && std::isdigit(static_cast<unsigned char>(t[from]))) ++from;
    return from;
  };
  // "[jobid,rank]<stdout>:" at `at`: its length, or 0.
  auto tag_at = [&](std::size_t at) -> std::size_t {
    if (line[at] != '[') return 0;
    const std::size_t comma = digits(line, at + 1);
    if (comma == at + 1 || comma >= line.size() || line[comma] != ',') return 0;
    const std::size_t close = digits(line, comma + 1);
    if (close == comma + 1) return 0;
    for (std::string_view stream : {"]<stdout>:", "]<stderr>:"})
      if (line.substr(close).starts_with(stream)) return close + stream.size() - at;
    return 0;
  };
  if (line.find("]<std") != std::string_view::npos) {
    buffer.clear();
    for (std::size_t at = 0; at < line.size();) {
      if (const std::size_t n = tag_at(at)) {
        at += n;
        continue;
      }
      buffer += line[at++];
    }
    return buffer;
  }
  const std::size_t lead = line.find_first_not_of(' ');
  if (lead == std::string_view::npos) return line;
  const std::size_t colon = digits(line, lead);
  if (colon > lead && colon + 1 < line.size() && line[colon] == ':' && line[colon + 1] == ' ') return line.substr(colon + 2);
  return line;
}

}  // namespace

int parse_nccl_version(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || (i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))))
      continue;
    int part[3] = {0, 0, 0}, n = 0;
    std::size_t j = i;
    while (n < 3) {
      std::size_t k = j;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
      if (k == j || k - j > 3) break;
      part[n++] = std::atoi(std::string(text.substr(j, k - j)).c_str());
      if (n == 3 || k >= text.size() || text[k] != '.') {
        j = k;
        break;
      }
      j = k + 1;
    }
    if (n == 3 && part[0] == 2 && part[1] < 100 && part[2] < 100) return part[0] * 10000 + part[1] * 100 + part[2];
  }
  return 0;
}

std::vector<Point> parse_nccl_tests(std::string_view text, const std::string& file, const ParseOptions& opts) {
  std::vector<Point> out;
  RunHeader h;
  const std::string file_op = op_in(std::filesystem::path(file).filename().string());
  int lineno = 0;
  std::string untagged;  // a line without its launcher's tags, when it had any
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = without_launcher_tags(line, untagged);
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    if (line[0] == '#') {
      read_comment(line, h, lineno);
      continue;
    }
    const auto tok = split_ws(line);
    const std::string where = fmt::format("{}:{}", file, lineno);
    auto bad = [&](const std::string& what) -> InputError {
      return InputError(fmt::format("{}: {}: expected an nccl-tests row 'size count type [redop] [root] time algbw "
                                    "busbw #wrong time algbw busbw #wrong'; got '{}'",
                                    where, what, line));
    };
    if (!integer(tok[0])) {  // NCCL INFO lines, MPI warnings, ...: not table rows
      // ... unless the rest is a row's: a size column mangled on its way here would drop the row unseen.
      if (looks_like_row(tok)) throw bad(fmt::format("size '{}' is not a positive integer", tok[0]));
      if (const int v = version_in(line)) h.nccl_version = v;  // "NCCL version 2.19.3+cuda12.3" (old logs)
      continue;
    }
    if (tok.size() < 11) throw bad(fmt::format("{} columns", tok.size()));
    const auto size = integer(tok[0]);
    const auto count = integer(tok[1]);
    // all_gather_perf and reduce_scatter_perf print a row of 0 bytes for each size under one element a
    // rank (-b below the rank count): an empty call, not data to fit.
    if (size && *size == 0 && count && *count == 0) continue;
    if (!size || *size <= 0) throw bad("size is not a positive integer");
    if (!count || *count < 0) throw bad("count is not an integer");
    if (number(tok[2])) throw bad("the third column (type) is a number");
    // The 8 trailing columns: out-of-place then in-place (time us, algbw GB/s, busbw GB/s, #wrong).
    const std::size_t k = tok.size() - 8;
    for (std::size_t j = 3; j < k; ++j)  // redop (a word) and root (an integer), when printed
      if (number(tok[j]) && !integer(tok[j])) throw bad(fmt::format("column {} ('{}') is out of place", j + 1, tok[j]));
    struct Placement {
      std::optional<double> t, alg, bus;
    } pl[2];
    for (int p = 0; p < 2; ++p) {
      const std::size_t b = k + 4 * p;
      const bool na = tok[b] == "N/A";  // placement not run (e.g. in-place for some ops)
      if (!na) {
        pl[p] = {number(tok[b]), number(tok[b + 1]), number(tok[b + 2])};
        if (!pl[p].t || !pl[p].alg || !pl[p].bus)
          throw bad(fmt::format("time/algbw/busbw '{} {} {}' are not numbers", tok[b], tok[b + 1], tok[b + 2]));
        if (!(*pl[p].t > 0)) throw bad(fmt::format("time {} us is not positive", tok[b]));
        // nccl-tests prints algbw = size / time for every collective (its *GetBw functions); a row
        // where the two disagree by more than 2x, beyond the 2-decimal rounding, was corrupted.
        const double implied = double(*size) / (*pl[p].t * 1e3);
        if (*pl[p].alg >= 0.1 && (implied > 2 * *pl[p].alg || 2 * implied < *pl[p].alg))
          throw bad(fmt::format("time {} us and algbw {} GB/s disagree: {} bytes in {} us is {:.3g} GB/s", tok[b],
                                tok[b + 1], *size, tok[b], implied));
      }
      const auto w = tok[b + 3];
      if (w != "N/A" && !number(w)) throw bad(fmt::format("#wrong '{}' is not a number", w));
      if (h.wrong_is_count && number(w) && *number(w) != 0)
        throw InputError(fmt::format("{}: nccl-tests reported {} wrong results for {} bytes; fix the system "
                                     "before calibrating against it",
                                     where, w, *size));
    }
    if (!pl[0].t && !pl[1].t) throw bad("neither placement has a time");
    const int best = !pl[1].t ? 0 : !pl[0].t ? 1 : (*pl[1].t < *pl[0].t ? 1 : 0);

    std::string op = h.op;
    if (!opts.op.empty()) {
      if (!op.empty() && op != opts.op)
        throw InputError(fmt::format("{}:{}: the log says this run is {}, but --op says {}", file, h.op_line, op,
                                     opts.op));
      op = opts.op;
    }
    if (op.empty()) op = file_op;
    if (op.empty())
      throw InputError(fmt::format("{}: the log does not say which collective it timed (no '# Collective test "
                                   "starting' line, and the file name names none); pass --op",
                                   where));
    const auto [nodes, gpn] = layout(h, opts, where);
    Point p;
    p.op_name = op;
    p.op = model_op(op);
    p.nodes = nodes;
    p.gpus_per_node = gpn;
    p.bytes = static_cast<double>(*size);
    p.time_s = *pl[best].t * 1e-6;
    p.algbw = *pl[best].alg * 1e9;
    p.busbw = *pl[best].bus * 1e9;
    p.where = where;
    p.gpus_per_process = h.gpus_per_thread;
    p.nccl_version = h.nccl_version;
    out.push_back(std::move(p));
  }
  if (out.empty()) throw InputError(fmt::format("{}: no nccl-tests result rows found", file));
  return out;
}

std::vector<Point> load_nccl_tests_file(const std::string& path, const ParseOptions& opts) {
  return parse_nccl_tests(read_text_file(path), path, opts);
}

}  // namespace tagcsim::calibrate
