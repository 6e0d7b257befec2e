#include "scenarios/budget.hpp"

#include "common/yaml_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>

namespace tagcsim::scenarios {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// A number at the start of `text`; the rest, trimmed, in `rest`. nullopt when it does not start with one.
std::optional<double> leading_number(const std::string& text, std::string& rest) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  rest = trim(std::string(end));
  return v;
}

// "2T", "300B", "1.5e12", "2T tokens": 10^3, 10^6, 10^9, 10^12 for K, M, B, T (a run's tokens are
// counted in billions and trillions, never bytes).
double load_tokens(const Input& in) {
  const std::string text = trim(in.as_string());
  std::string rest;
  const auto v = leading_number(text, rest);
  if (rest.size() >= 6 && rest.substr(rest.size() - 6) == "tokens") rest = trim(rest.substr(0, rest.size() - 6));
  double scale = 0;
  if (rest.empty()) scale = 1;
  if (rest == "K" || rest == "k") scale = 1e3;
  if (rest == "M") scale = 1e6;
  if (rest == "B" || rest == "G") scale = 1e9;
  if (rest == "T") scale = 1e12;
  if (!v || scale == 0)
    in.fail(fmt::format("expected the run's tokens as a count, or with K, M, B (10^9) or T (10^12), e.g. '2T' or "
                        "'300B'; got '{}'",
                        text));
  const double tokens = *v * scale;
  if (tokens < 1 || tokens > 1e18) in.fail(fmt::format("expected between 1 and 10^18 tokens; got '{}'", text));
  return tokens;
}

constexpr const char* kCurrencySigns[] = {"$", "€", "£", "¥"};
bool is_symbol(const std::string& s) {
  return std::any_of(std::begin(kCurrencySigns), std::end(kCurrencySigns), [&](const char* c) { return s == c; });
}

// "2.49 USD", "2.49 EUR", "$2.49", "2.49 $": the currency is whatever the user wrote, kept for the report.
void load_price(const Input& in, Budget& b) {
  const std::string text = trim(in.as_string());
  std::string number = text, symbol;
  for (const char* s : kCurrencySigns)
    if (text.rfind(s, 0) == 0) symbol = s, number = trim(text.substr(symbol.size()));
  std::string rest;
  const auto v = leading_number(number, rest);
  const bool code = !rest.empty() && rest.size() <= 4 &&
                    std::all_of(rest.begin(), rest.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  const bool ok = v && (symbol.empty() ? code || is_symbol(rest) : rest.empty());
  if (!ok) {
    if (v && rest.empty())
      in.fail(fmt::format("a price needs its currency: e.g. '{} USD' (one GPU for one hour)", text));
    in.fail(fmt::format("expected the price of one GPU-hour and its currency, e.g. '2.49 USD', '2.10 EUR' or "
                        "'$2.49'; got '{}'",
                        text));
  }
  if (*v <= 0) in.fail(fmt::format("expected a positive price; got '{}'", text));
  b.gpu_hour_price = *v;
  b.currency = symbol.empty() ? rest : symbol;
}

}  // namespace

std::string tokens_text(double tokens) {
  for (const auto& [scale, suffix] : {std::pair{1e12, "T"}, std::pair{1e9, "B"}, std::pair{1e6, "M"}}) {
    if (tokens < scale) continue;
    const std::string t = fmt::format("{:g}{}", tokens / scale, suffix);
    if (std::strtod(t.c_str(), nullptr) * scale == tokens) return t;  // exact in a few digits
  }
  return yaml_number(tokens);
}

Budget load_budget(const Input& in) {
  if (!in.is_map()) in.fail("expected a map: {tokens: 2T, gpu_hour_price: 2.49 USD} (either key alone will do)");
  in.expect_keys({"tokens", "gpu_hour_price"});
  Budget b;
  if (auto t = in.find("tokens")) b.tokens = load_tokens(*t);
  if (auto p = in.find("gpu_hour_price")) load_price(*p, b);
  if (!b.any()) in.fail("expected tokens (the run's), gpu_hour_price (one GPU for one hour), or both");
  return b;
}

std::string budget_yaml(const Budget& b) {
  if (!b.any()) return "";
  std::string out;
  YamlMap root(out, 0);
  YamlMap k = root.open("budget", "a whole training run at each row's throughput");
  if (b.tokens > 0) k.put("tokens", tokens_text(b.tokens), "tokens in the run");
  if (b.gpu_hour_price > 0)
    k.put("gpu_hour_price", yaml_scalar(is_symbol(b.currency) ? b.currency + yaml_number(b.gpu_hour_price)
                                                              : yaml_number(b.gpu_hour_price) + " " + b.currency),
          "one GPU for one hour");
  return out;
}

RunCost run_cost(const Budget& b, double tokens_per_s_per_gpu, int gpus) {
  RunCost c;
  const double cluster_rate = tokens_per_s_per_gpu * gpus;  // tokens/s
  if (cluster_rate <= 0) return c;
  if (b.tokens > 0) {
    c.time_s = b.tokens / cluster_rate;
    c.gpu_hours = *c.time_s * gpus / 3600;
  }
  if (b.gpu_hour_price > 0) {
    c.cost_per_million_tokens = b.gpu_hour_price * gpus / 3600 / cluster_rate * 1e6;
    if (c.gpu_hours) c.cost = *c.gpu_hours * b.gpu_hour_price;
  }
  return c;
}

std::string duration_text(double seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.1f} d", seconds / 86400);
  if (seconds >= 2 * 3600) return fmt::format("{:.1f} h", seconds / 3600);
  if (seconds >= 120) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.0f} s", seconds);
}

std::string money_text(double amount, const std::string& currency) {
  std::string n = amount >= 1e9   ? fmt::format("{:.2f}B", amount / 1e9)
                  : amount >= 1e6 ? fmt::format("{:.2f}M", amount / 1e6)
                  : amount >= 1e4 ? fmt::format("{:.1f}k", amount / 1e3)
                  : amount >= 1   ? fmt::format("{:.2f}", amount)
                                  : fmt::format("{:#.3g}", amount);
  return is_symbol(currency) ? currency + n : n + " " + currency;
}

}  // namespace tagcsim::scenarios
