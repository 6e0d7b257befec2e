// `policies:` and `compression:` in a scenario.
//
//   policies: [fsdp, tagc, {name: tagc-batched, ratio: 4, index: 8bit-max}]
//   compression: {ratio: 2, sparsity: 0.8, index: 1bit-sum, sparsify: bisect, select: tagc}
//
// `compression:` holds the settings every compressing policy starts from; a
// policy given as a map overrides them for itself.
#include "scenarios/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tagcsim::scenarios {
namespace {

const std::initializer_list<std::string_view> kCompressionKeys = {"ratio",  "sparsity", "index",        "sparsify",
                                                                  "select", "overlap",  "process_group"};

models::UnitKind parse_unit_kind(const Input& in) {
  const auto s = in.as_choice({"root", "embedding", "position_embedding", "attention_qkv", "attention_out", "mlp_up",
                               "mlp_down", "lm_head", "block"});
  using K = models::UnitKind;
  for (K k : {K::Root, K::Embedding, K::PositionEmbedding, K::AttentionQKV, K::AttentionOut, K::MlpUp, K::MlpDown,
              K::LmHead, K::Block})
    if (s == models::to_string(k)) return k;
  in.fail(fmt::format("unit kind '{}' is not known to the model library", s));
}

sim::Selection parse_selection(const Input& in) {
  sim::Selection sel;
  if (in.is_scalar()) {
    sel.rule = in.as_choice({"tagc", "all"}) == "tagc" ? sim::Selection::Rule::Tagc : sim::Selection::Rule::All;
    return sel;
  }
  in.expect_keys({"min_params", "kinds"});
  if (in.has("min_params") == in.has("kinds")) in.fail("expected exactly one of min_params or kinds");
  if (auto v = in.find("min_params")) {
    sel.rule = sim::Selection::Rule::MinParams;
    sel.min_params = std::int64_t(v->as_positive());
  } else {
    sel.rule = sim::Selection::Rule::Kinds;
    const Input kinds = in["kinds"];
    for (std::size_t i = 0; i < kinds.size(); ++i) sel.kinds.push_back(parse_unit_kind(kinds.at(i)));
  }
  return sel;
}

void apply_compression(sim::Policy& p, const Input& in) {
  if (auto v = in.find("ratio")) {
    p.ratio = v->as_double();
    if (!(p.ratio > 1)) v->fail(fmt::format("expected a ratio > 1 (uncompressed / sketch size), got {}", p.ratio));
  }
  if (auto v = in.find("sparsity")) {
    p.sparsity = v->as_double();
    if (!(p.sparsity >= 0 && p.sparsity < 1)) v->fail(fmt::format("expected a sparsity in [0, 1), got {}", p.sparsity));
  }
  if (auto v = in.find("index")) p.index = kernels::parse_index_encoding(*v);
  if (auto v = in.find("sparsify")) p.exact_topk = v->as_choice({"bisect", "topk"}) == "topk";
  if (auto v = in.find("select")) p.selection = parse_selection(*v);
  if (auto v = in.find("overlap")) p.overlap = v->as_fraction();
  if (auto v = in.find("process_group")) p.own_process_group = v->as_choice({"default", "own"}) == "own";
}

sim::Policy make_policy(const Input& name) {
  sim::Policy p;
  const auto s = name.as_choice({"fsdp", "lhc", "tagc", "tagc-batched"});
  p.label = s;
  if (s == "fsdp") p.kind = sim::PolicyKind::Fsdp;
  if (s == "lhc") {
    p.kind = sim::PolicyKind::Lhc;
    p.sparsity = 0;  // LHC sketches the gradient as it is
    p.index = kernels::IndexEncoding::Bit8Max;
  }
  if (s == "tagc") p.kind = sim::PolicyKind::Tagc;  // as published: 1-bit SUM index, bisection
  if (s == "tagc-batched") {
    p.kind = sim::PolicyKind::TagcBatched;
    p.index = kernels::IndexEncoding::Bit8Max;  // a true OR that a reduce-scatter can carry
    p.exact_topk = true;
  }
  return p;
}

}  // namespace

std::vector<sim::Policy> load_policies(const Input& doc) {
  std::optional<Input> compression = doc.find("compression");
  if (compression) compression->expect_keys(kCompressionKeys);
  std::vector<Input> entries;
  if (auto one = doc.find("policy")) {
    entries.push_back(*one);
  } else if (auto list = doc.find("policies")) {
    if (list->is_scalar()) entries.push_back(*list);
    else
      for (std::size_t i = 0; i < list->size(); ++i) entries.push_back(list->at(i));
  }
  std::vector<sim::Policy> out;
  if (entries.empty()) out.push_back(make_policy(Input::load_string("fsdp", "(default)")));
  std::vector<std::string> own;  // per entry: the settings it gives itself, "index=8bit-max,ratio=4"
  std::vector<bool> labelled;
  for (const auto& e : entries) {
    sim::Policy p;
    std::string settings;
    if (e.is_map()) {
      std::vector<std::string> keys = {"name", "label", "reduce_dtype"};
      keys.insert(keys.end(), kCompressionKeys.begin(), kCompressionKeys.end());
      e.expect_keys(keys);
      p = make_policy(e["name"]);
      if (p.kind != sim::PolicyKind::Fsdp && compression) apply_compression(p, *compression);
      if (p.kind == sim::PolicyKind::Fsdp) {
        for (auto k : kCompressionKeys)
          if (auto v = e.find(k)) v->fail("fsdp does not compress; this setting belongs to lhc or tagc policies");
      }
      apply_compression(p, e);
      if (auto v = e.find("reduce_dtype")) {
        if (p.kind != sim::PolicyKind::Fsdp) v->fail("reduce_dtype applies to fsdp; compressed policies send fp32");
        const auto d = v->as_choice({"bf16", "fp16", "fp32"});
        p.reduce_dtype = d == "fp32" ? sim::Dtype::FP32 : d == "bf16" ? sim::Dtype::BF16 : sim::Dtype::FP16;
        p.label = "fsdp-" + d;
      }
      if (auto v = e.find("label")) p.label = v->as_string();
      for (const auto& k : e.keys()) {
        if (k == "name" || k == "label" || k == "reduce_dtype") continue;
        const YAML::Node v = e[k].raw();  // a copy: e[k] is a temporary
        std::string text;
        if (v.IsScalar()) {
          text = v.Scalar();
        } else {
          YAML::Emitter em;
          em << YAML::Flow << v;
          text = em.c_str();
        }
        settings += fmt::format("{}{}={}", settings.empty() ? "" : ",", k, text);
      }
    } else {
      p = make_policy(e);
      if (p.kind != sim::PolicyKind::Fsdp && compression) apply_compression(p, *compression);
    }
    own.push_back(settings);
    labelled.push_back(e.is_map() && e.has("label"));
    out.push_back(std::move(p));
  }
  // Rows of one policy with different settings get different names: tagc-batched[index=8bit-max].
  auto count = [&](const std::string& label) {
    return std::count_if(out.begin(), out.end(), [&](const sim::Policy& p) { return p.label == label; });
  };
  std::vector<std::string> renamed(out.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    renamed[i] = !labelled[i] && !own[i].empty() && count(out[i].label) > 1
                     ? fmt::format("{}[{}]", out[i].label, own[i])
                     : out[i].label;
  for (std::size_t i = 0; i < entries.size(); ++i) out[i].label = renamed[i];
  for (std::size_t i = 0; i < entries.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (out[j].label == out[i].label)
        entries[i].fail(labelled[i] ? fmt::format("the label '{}' is already taken by policies[{}]", out[i].label, j)
                                    : fmt::format("the same policy as policies[{}] ('{}'); remove it, or tell them "
                                                  "apart with a label",
                                                  j, out[i].label));
  return out;
}

}  // namespace tagcsim::scenarios
