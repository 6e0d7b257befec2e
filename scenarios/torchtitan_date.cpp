// What torchtitan ran on a given date (training.torchtitan_date): the defaults it changed that move
// a prediction, each set the way the run's checkout had it unless the scenario sets the key itself
// (docs/scenarios.md, "Matching a run's PyTorch and torchtitan"). Each change is a merged pull
// request, read in torchtitan's history; the dates are its merge dates.
#include "scenarios/torchtitan_date.hpp"

#include "models/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <regex>

namespace tagcsim::scenarios {
namespace {

struct Change {
  const char* date;  // merged (YYYY-MM-DD)
  const char* pr;
};

constexpr Change kFusedAdamW{"2025-02-24", "torchtitan#881"};       // AdamW fused=True by default
constexpr Change kCompiledLoss{"2025-04-02", "torchtitan#1033"};    // the loss compiled with the model
constexpr Change kCudnnOnBlackwell{"2025-05-14", "torchtitan#1196"};  // SDPA asks cuDNN first on compute capability 10
// The attention refactor left one SDPA backend list for every GPU, cuDNN first with set_priority
// (torchtitan/models/attention.py at 6a3a9da95): Hopper and Ampere run cuDNN's kernels from then on.
constexpr Change kCudnnFirst{"2025-10-09", "torchtitan#1776"};
constexpr Change kNoEarlyStop{"2025-08-29", "torchtitan#1580"};     // checkpoint(..., early_stop=False)
constexpr Change kQkNormSharded{"2025-10-14", "torchtitan#1870"};   // Qwen3's q/k norms no longer NoParallel
constexpr Change kGqaShared{"2026-01-27", "torchtitan#2259"};       // K and V no longer repeated (enable_gqa)
constexpr Change kAllSdpaSaved{"2025-12-01", "torchtitan#2095"};    // every SDPA backend in the per-op save list
constexpr Change kAbsUnsaved{"2025-02-06", "torchtitan#820"};        // aten.abs out of the per-op save list
constexpr Change kFlexDocuments{"2026-06-09", "torchtitan#3571"};   // FlexAttention over document masks, SDPA gone
constexpr Change kChunkedLoss{"2026-04-27", "torchtitan#2937"};    // ChunkedCELoss, 8 slices, every model's config
// How torch.compile covers a mixture of experts' blocks: child by child around FSDP's hooks on the
// experts from #1895 (before it a checkpointed MoE block fell back to eager whole), each block whole
// from #2741 (FSDP applied per block since #2281).
constexpr Change kMoeSubmodules{"2025-10-29", "torchtitan#1895"};
constexpr Change kMoeWholeBlock{"2026-04-14", "torchtitan#2741"};
// The router's gate under fp32 autocast (its GEMMs on CUDA cores; torchtitan#4273).
constexpr Change kRouterFp32{"2026-03-04", "torchtitan#2389"};
// The per-op save list keeps the all-to-alls' outputs: DeepSeek-V3's and Llama 4's lists from
// #1672, every model's (Qwen3's among them) once #2357 made them one list.
constexpr Change kAllToAllSaved{"2025-09-06", "torchtitan#1672"};
constexpr Change kOneSaveList{"2026-03-23", "torchtitan#2357"};
// DeepSeek-V3's configs (latent attention) went to FlexAttention over document masks first: SDPA
// had only its memory-efficient kernel for V heads narrower than q's (#1610's description).
constexpr Change kFlexDocumentsDeepSeek{"2025-08-22", "torchtitan#1610"};
// Not torchtitan's own change: PyTorch 2.9's release, after which a torchtitan checkout (which
// installs PyTorch nightly) runs nn.RMSNorm as one fused kernel each way. Between 2.8's branch cut
// (July 2025) and it, the nightly decides: the scenario says.
constexpr Change kPytorch29{"2025-10-15", "PyTorch 2.9"};

bool since(const std::string& date, const Change& c) { return date >= c.date; }
std::string cite(const Change& c) { return fmt::format("{}, {}", c.pr, c.date); }

}  // namespace

std::vector<std::string> apply_torchtitan_date(const Input& training, sim::Training& t,
                                               const models::TransformerConfig& m, const sim::KernelProfile* gpu) {
  const bool blackwell = gpu && gpu->family == "blackwell";
  const auto v = training.find("torchtitan_date");
  if (!v) return {};
  const std::string date = v->as_string();
  static const std::regex iso(R"((20\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))");
  if (!std::regex_match(date, iso))
    v->fail(fmt::format("expected the date of the run's torchtitan checkout as YYYY-MM-DD, got '{}'", date));
  if (t.framework != sim::Framework::Torchtitan)
    v->fail("says which torchtitan a run used: set framework: torchtitan as well");
  std::vector<std::string> set;
  const auto unset = [&](const char* key) { return !training.has(key); };

  if (unset("optimizer")) {
    t.optimizer = since(date, kFusedAdamW) ? sim::Training::Optimizer::Fused : sim::Training::Optimizer::Foreach;
    set.push_back(fmt::format("optimizer {} ({}{})", since(date, kFusedAdamW) ? "fused" : "foreach",
                              since(date, kFusedAdamW) ? "" : "fused from ", cite(kFusedAdamW)));
  }
  if (t.impl.compiled && unset("compile_loss")) {
    t.impl.compiled_loss = since(date, kCompiledLoss);
    set.push_back(fmt::format("the loss {} ({}{})", since(date, kCompiledLoss) ? "compiled" : "eager",
                              since(date, kCompiledLoss) ? "" : "compiled from ", cite(kCompiledLoss)));
  }
  if (t.impl.compiled && m.experts > 0 && unset("compile_moe") && !since(date, kMoeWholeBlock)) {
    using M = models::Implementation::MoeCompile;
    // Before #1895 an uncheckpointed block compiled around its graph break, as child by child.
    const bool eager = !since(date, kMoeSubmodules) && t.activation_checkpointing;
    t.impl.compile_moe = eager ? M::Eager : M::Submodules;
    set.push_back(eager ? fmt::format("compile_moe eager (checkpointed MoE blocks fell back to eager until {}; whole "
                                      "blocks compiled from {})",
                                      cite(kMoeSubmodules), cite(kMoeWholeBlock))
                        : fmt::format("compile_moe submodules (whole blocks compiled from {})", cite(kMoeWholeBlock)));
  }
  if (m.experts > 0 && unset("router_fp32") && since(date, kRouterFp32)) {
    t.impl.router_fp32 = true;
    set.push_back(fmt::format("router_fp32 (the gate under fp32 autocast from {})", cite(kRouterFp32)));
  }
  // A stated PyTorch (training.pytorch) has decided it already; the date only guesses the nightly.
  if (m.norm == models::Norm::RMSNorm && unset("rms_norm") && unset("pytorch") && since(date, kPytorch29)) {
    t.impl.fused_rms_norm = true;
    set.push_back(fmt::format("rms_norm fused (PyTorch nightly after {})", cite(kPytorch29)));
  }
  if (unset("loss_chunks") && since(date, kChunkedLoss)) {
    t.impl.loss_chunks = 8;
    set.push_back(fmt::format("loss_chunks 8 (ChunkedCELoss from {})", cite(kChunkedLoss)));
  }
  if (t.activation_checkpointing && unset("checkpoint_early_stop")) {
    t.impl.checkpoint_early_stop = !since(date, kNoEarlyStop);
    set.push_back(fmt::format("checkpoint_early_stop {} ({}{})", since(date, kNoEarlyStop) ? "false" : "true",
                              since(date, kNoEarlyStop) ? "" : "false from ", cite(kNoEarlyStop)));
  }
  if (t.tensor_parallel > 1 && m.qk_norm && t.impl.tp_plan == models::Implementation::TpPlan::Torchtitan &&
      unset("tp_qk_norm") && !since(date, kQkNormSharded)) {
    t.impl.qk_norm_no_parallel = true;
    set.push_back(fmt::format("tp_qk_norm no_parallel (sharded from {})", cite(kQkNormSharded)));
  }
  if (unset("attention")) {
    const Change& flex_from = m.kv_lora_rank > 0 ? kFlexDocumentsDeepSeek : kFlexDocuments;
    if (since(date, flex_from)) {
      if (!training.has("document_length"))
        v->fail(fmt::format("torchtitan since {} runs FlexAttention over each sequence's documents: give "
                            "training.document_length (the data's token-weighted mean document length, "
                            "sum(L^2) / sum(L)), or set training.attention",
                            cite(flex_from)));
      if (gpu && !gpu->has_attention(models::AttentionKernel::Flex))
        v->fail(fmt::format("torchtitan since {} runs FlexAttention, which kernel profile '{}' has no measurement "
                            "of: set training.attention to the nearest it has ({})",
                            cite(flex_from), gpu->name, fmt::join(gpu->attention_kernels(), ", ")));
      t.impl.attention = models::AttentionKernel::Flex;
      set.push_back(fmt::format("attention flex over documents ({})", cite(flex_from)));
    } else {
      // Before it, SDPA's causal mask over whole sequences: the data's documents are not masked.
      if (t.impl.document_length > 0) {
        t.impl.document_length = 0;
        set.push_back(fmt::format("documents not masked (SDPA over whole sequences; block-causal from {})",
                                  cite(flex_from)));
      }
      if (m.attention_sinks) {
        // gpt-oss's attention (its sinks) runs on FlexAttention only, causal until then.
        if (gpu && !gpu->has_attention(models::AttentionKernel::Flex))
          v->fail(fmt::format("torchtitan's gpt-oss runs FlexAttention only, which kernel profile '{}' has no "
                              "measurement of: set training.attention to the nearest it has ({})",
                              gpu->name, fmt::join(gpu->attention_kernels(), ", ")));
        t.impl.attention = models::AttentionKernel::Flex;
        set.push_back(fmt::format("attention flex over whole sequences (gpt-oss's sinks run on FlexAttention only; "
                                  "documents masked from {})",
                                  cite(flex_from)));
      } else if (blackwell && since(date, kCudnnOnBlackwell)) {
        t.impl.attention = models::AttentionKernel::Cudnn;
        set.push_back(fmt::format("attention cudnn on Blackwell ({})", cite(kCudnnOnBlackwell)));
      } else if (since(date, kCudnnFirst) && gpu) {
        // A profile without cuDNN curves (Ampere's: no published cuDNN attention measurement) keeps
        // FlashAttention-2's, and the heading says what it stands in for. Without a profile the
        // datasheet roofline times every attention kernel alike.
        if (gpu->has_attention(models::AttentionKernel::Cudnn)) {
          t.impl.attention = models::AttentionKernel::Cudnn;
          set.push_back(fmt::format("attention cudnn (SDPA asks cuDNN first from {})", cite(kCudnnFirst)));
        } else {
          set.push_back(fmt::format("attention flash2 standing in for cuDNN's, which SDPA asks first from {} "
                                    "(kernel profile '{}' has no cuDNN attention measurement)",
                                    cite(kCudnnFirst), gpu->name));
        }
      }
    }
  }
  if (m.kv_heads < m.heads && m.kv_lora_rank == 0 && unset("repeat_kv")) {
    t.impl.repeat_kv = !since(date, kGqaShared);
    set.push_back(fmt::format("repeat_kv {} ({}{})", since(date, kGqaShared) ? "false" : "true",
                              since(date, kGqaShared) ? "" : "shared from ", cite(kGqaShared)));
  }
  // cuDNN's op joined the per-op save list after it joined the backend list, so until then the
  // backward re-ran it.
  const bool cudnn_listed = since(date, blackwell ? kCudnnOnBlackwell : kCudnnFirst);
  if (t.impl.selective_op && t.impl.attention == models::AttentionKernel::Cudnn && cudnn_listed &&
      unset("selective_op_recomputes_attention") && !since(date, kAllSdpaSaved)) {
    t.impl.selective_op_recomputes_attention = true;
    set.push_back(fmt::format("per-op checkpointing re-runs cuDNN's attention (saved from {})", cite(kAllSdpaSaved)));
  }
  // Every run of the checkout gets it, as every run gets its optimizer, so that two runs of one
  // checkout differ only in what their scenarios set; the heading names it where it moves memory.
  if (unset("selective_op_saves_abs") && !since(date, kAbsUnsaved)) {
    t.impl.selective_op_saves_abs = true;
    if (t.impl.selective_op && t.impl.float8_linears)
      set.push_back(fmt::format("per-op checkpointing saves float8's abs (out of the save list from {})",
                                cite(kAbsUnsaved)));
  }
  if (t.impl.selective_op && t.expert_parallel > 1 && unset("selective_op_recomputes_all_to_all")) {
    // Qwen3's MoE (q/k norms, no shared expert: not DeepSeek's, GLM's or Llama 4's shape) kept its
    // own list, without them, until #2357.
    const bool qwen3 = m.qk_norm && m.shared_experts == 0 && m.kv_lora_rank == 0;
    const Change& saved_from = qwen3 ? kOneSaveList : kAllToAllSaved;
    if (!since(date, saved_from)) {
      t.impl.selective_op_recomputes_all_to_all = true;
      set.push_back(fmt::format("per-op checkpointing re-runs the all-to-alls (saved from {})", cite(saved_from)));
    }
  }
  return set;
}

}  // namespace tagcsim::scenarios
