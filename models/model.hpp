// Transformer models and the FSDP units they are wrapped into.
//
// A model is described by a handful of shape numbers (TransformerConfig), in
// YAML or by preset name. fsdp_units() cuts it into the flat parameter groups
// that PyTorch FSDP all-gathers and reduce-scatters, with the work and memory
// each one costs per micro-batch.
#pragma once

#include "common/input.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tagcsim::models {

enum class Norm { LayerNorm, RMSNorm };

struct TransformerConfig {
  std::string name;
  int layers = 0;
  int hidden = 0;          // d_model
  int heads = 0;
  int kv_heads = 0;        // == heads without GQA
  int head_dim = 0;        // per head; 0: hidden / heads (Gemma, Qwen3 and Mistral NeMo set their own)
  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank > 0): K and V come up from a shared
  // latent of kv_lora_rank (wkv_a: hidden -> kv_lora_rank + rope_head_dim, an RMSNorm on the latent,
  // wkv_b: kv_lora_rank -> heads x (head_dim - rope_head_dim + v_head_dim)); q directly (hidden ->
  // heads x head_dim) or, with q_lora_rank, through a normed latent of its own; rotary on the last
  // rope_head_dim of each q head and on one shared k part; V heads of v_head_dim, the attention's
  // output heads x v_head_dim. head_dim is q's and k's width a head (nope + rope); kv_heads = heads.
  int kv_lora_rank = 0;
  int q_lora_rank = 0;
  int rope_head_dim = 0;
  int v_head_dim = 0;
  bool qk_norm = false;    // RMSNorm on each head of q and k before rotary (Qwen3): weights of head_dim each
  int sliding_window = 0;  // keys a query attends at most, itself included (Mistral 7B v0.1: 4096); 0 = all before it
  int full_attention_every = 0;  // with a window: every K-th block attends fully (Gemma 2: 2, Gemma 3: 6); 0 = none
  // Chunked attention (Llama 4's attention_chunk_size, 8192): each query attends within its chunk of
  // this many tokens. Up to one chunk that is the causal mask, which is how it is timed; a longer
  // sequence is refused (scenarios/scenario.cpp). 0 = none.
  int attention_chunk = 0;
  bool post_norms = false;       // a norm on the attention's and the MLP's outputs too, before each residual (Gemma 2, 3)
  bool logit_softcap = false;    // logits = c tanh(logits / c) before the loss (Gemma 2's final_logit_softcapping)
  std::int64_t ffn = 0;    // FFN inner size
  bool gated_mlp = false;  // SwiGLU-style: three FFN matrices instead of two
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  int seq_len = 0;                 // training sequence length
  int learned_positions = 0;       // rows of a learned position embedding (GPT-2: 1024); 0 = rotary/ALiBi
  Norm norm = Norm::LayerNorm;
  bool bias = false;               // biases on linear layers
  bool qkv_bias = false;           // biases on q, k and v only (Qwen2, Qwen2.5); `bias` implies them
  // Mixture of experts (dropless top-k routing, every block): the MLP becomes a router (hidden ->
  // experts) and `experts` SwiGLU experts, each ffn wide, of which each token runs
  // experts_per_token. 0 experts: a dense MLP.
  int experts = 0;
  int experts_per_token = 0;
  int shared_experts = 0;  // SwiGLU experts of ffn every token runs beside its routed ones (DeepSeek, Llama 4)
  // Qwen2-MoE's sigmoid gate on the shared experts' output: a Linear hidden -> 1 beside the router,
  // timed as one more router column.
  bool shared_expert_gate = false;
  // Dense blocks among a mixture of experts': the first dense_layers blocks (DeepSeek's
  // first_k_dense_replace, GLM-4.5's) and, when moe_every > 1, every block but each moe_every-th
  // (Llama 4's interleave_moe_layer_step: blocks moe_every - 1, 2 moe_every - 1, ... are MoE) run a
  // dense SwiGLU MLP of dense_ffn (0: ffn) instead of the experts.
  int dense_layers = 0;
  int moe_every = 1;
  std::int64_t dense_ffn = 0;
  // gpt-oss's experts (OpenAI 2025), as its reference code and torchtitan's gpt_oss run them:
  // expert_bias, a bias on each expert's two matrices, gathered to the expert's rows
  // (repeat_interleave) and added after each grouped GEMM; swiglu_limit > 0, the clamped SwiGLU of
  // gate and up interleaved in one matrix (x[..., ::2], x[..., 1::2]): glu clamped above, linear
  // both ways at the limit, glu sigmoid(1.702 glu) (linear + 1), op by op in eager PyTorch.
  bool expert_bias = false;
  double swiglu_limit = 0;
  // gpt-oss's attention sinks: one learned logit a head, applied after the attention kernel as
  // its output times sigmoid(lse - sink) (torchtitan's FlexAttention path, return_lse).
  bool attention_sinks = false;
  std::string source;              // where the shape comes from (paper, model card)
};

// Presets: gpt2-124m, gpt2-355m, gpt2-774m, gpt2-1.5b, gpt2-124m-untied (TAGC's 162.6M run),
// llama2-7b, llama2-13b, llama2-70b, llama3.1-8b, llama3.1-70b, llama3.1-405b,
// llama3.2-1b, llama3.2-3b, mistral-7b-v0.1, mistral-7b-v0.3, qwen2.5-0.5b ... qwen2.5-72b, qwen3-0.6b ... qwen3-32b,
// mpt-125m, mpt-350m, mpt-760m, mpt-1b, mpt-3b, mpt-7b, mpt-13b, mpt-30b, mpt-70b; mixtures of experts
// mixtral-8x7b, qwen3-30b-a3b, qwen3-235b-a22b, gpt-oss-20b, gpt-oss-120b, deepseek-v2-lite,
// deepseek-v3-671b (latent attention); codellama-34b.
std::vector<std::string> preset_names();
// Other names users type for them ("llama3-8b" for llama3.1-8b); preset() takes them too.
const Aliases& preset_aliases();
// Throws InputError naming the preset list when `name` is unknown.
TransformerConfig preset(const std::string& name);

// `model:` in a scenario: either a preset name (scalar), or a map
//   { preset: llama2-7b, seq_len: 2048 }   (preset plus overrides), or
//   { hf_config: path/config.json, ... }   (a Hugging Face config, relative to the scenario, plus overrides), or
//   { layers: .., hidden: .., heads: .., ... } (full description).
// Validates (e.g. heads divide hidden, kv_heads divide heads) with file:line errors.
TransformerConfig load_model(const Input& in);
// A shape from a Hugging Face config.json's contents, by its model_type (models/hf_config.cpp);
// InputError naming the file, line and key for an architecture or a field it does not model.
TransformerConfig model_from_hf_config(const Input& config);
// Same checks for a config built in code; throws InputError with `what` as the prefix.
void validate(const TransformerConfig& m, const std::string& what);

// Trainable parameters, as the published counts give them.
std::int64_t parameter_count(const TransformerConfig& m);
// Of a mixture of experts' blocks, those with the experts (dense_layers and moe_every leave the
// others a dense MLP of dense_ffn, else ffn); 0 for a dense model.
int moe_block_count(const TransformerConfig& m);
// Of them, those one token's matmuls use: all of a dense model's; of a mixture of experts, the
// router and experts_per_token of each block's experts.
std::int64_t active_parameter_count(const TransformerConfig& m);
// Model FLOPs per token for the MFU convention of PaLM / nanoGPT at a training sequence of
// seq_len tokens (which need not be the model's own seq_len):
// 6 * (non-embedding params + lm_head) + 12 * layers * (heads x head_dim, which is hidden unless the
// model sets head_dim) * seq_len,
// where the params are parameter_count less the position embedding and, when
// untied, less wte (a tied wte is the head and counts); the attention term has
// no causal discount.
double model_flops_per_token(const TransformerConfig& m, int seq_len);

// How the model is cut into FSDP units.
enum class WrapPolicy {
  Block,       // one unit per transformer block, plus a root unit holding embeddings, final norm, head
  Size,        // TAGC's reference: every nn.Linear and nn.Embedding its own unit; norms in the root
  Torchtitan,  // torchtitan's fully_shard layout: the token embedding, each block, and [norm, output]
               // as units of their own; the root keeps no parameters, so there is no root unit
};

// What a unit holds, in the user's words. TAGC's layer selection predicates use it.
enum class UnitKind {
  Root,               // what is left after wrapping: norms (and, under Block, embeddings + head)
  Embedding,          // token embedding (wte)
  PositionEmbedding,  // learned position embedding (wpe)
  AttentionQKV,       // q/k/v projection: fused c_attn, or each of q, k, v (Llama layout)
  AttentionOut,       // attention output projection
  MlpUp,              // FFN up (and gate, when gated: one unit per matrix, see name)
  MlpDown,            // FFN down
  LmHead,             // output projection (absent when tied)
  Block,              // a whole transformer block (Block policy)
};
const char* to_string(UnitKind k);

// Which kernel runs the attention core; the device profile times each (sim/kernel_profile.hpp).
enum class AttentionKernel {
  Flash2,       // FlashAttention-2 (Dao-AILab; also PyTorch SDPA's flash backend)
  Flash3,       // FlashAttention-3 (Hopper)
  FlashTriton,  // the Triton FlashAttention kernel (MosaicML's attn_impl: triton)
  Cudnn,        // cuDNN's fused attention (SDPA's cudnn backend)
  Math,         // eager attention: QK^T, softmax, AV as separate kernels (s x s scores kept)
  Flex,         // FlexAttention: torch.compile's Triton template behind torch.nn.attention.flex_attention
};
const char* to_string(AttentionKernel k);  // "flash2", "flash3", "flash-triton", "cudnn", "math", "flex"
std::vector<std::string> attention_kernel_names();

// How the training code runs the model's operations: which kernels PyTorch launches
// (models/kernel_list.hpp lists them).
struct Implementation {
  AttentionKernel attention = AttentionKernel::Flash2;
  bool compiled = false;             // torch.compile: each chain of element-wise ops is one kernel
  // The loss compiled too: cast, log-softmax and NLL in one kernel that keeps only the 16-bit
  // logits and a per-token log-sum-exp. torchtitan compiles it with the model since bbb1b616e (Apr
  // 2025, torchtitan#1033); before, its train.py left it eager ("compiling loss function causes
  // CUDA errors", @9dec370), and a loss computed outside a compiled model stays eager.
  bool compiled_loss = false;
  // What torch.compile covers of a mixture of experts' blocks (training.compile_moe). Block: each
  // block whole (torchtitan since #2741, Apr 2026). Submodules: each child of the block compiled on
  // its own, around FSDP's hooks on the experts (torchtitan #1895 to #2741): the norms alone (not
  // fused with the residual adds, which run eager), the attention, the router, the shared experts and
  // the generic experts' grouped-GEMM function with its SwiGLU, but not gpt-oss's own experts
  // function (its biases and clamped SwiGLU run eager). Eager: the MoE blocks not compiled at all
  // (torchtitan before #1895 under activation checkpointing, where the experts' graph break sent
  // the whole block back to eager). Dense blocks are compiled whole either way.
  enum class MoeCompile { Block, Submodules, Eager } compile_moe = MoeCompile::Block;
  // The loss (training.cross_entropy). Fp32: eager, the logits cast to fp32 first (torchtitan, Hugging
  // Face, LLM Foundry). Fused: one kernel each way (flash-attn's xentropy). Bf16: eager F.cross_entropy
  // on the 16-bit logits as the head gives them, a model kept in bf16 without autocast (KempnerForge):
  // log_softmax reads and writes 16-bit values and keeps its 16-bit output for the backward.
  enum class CrossEntropy { Fp32, Fused, Bf16 } cross_entropy = CrossEntropy::Fp32;
  // The output projection and the loss run in this many slices of the sequence, each slice's
  // forward and backward before the next, so that only one slice's logits live at a time:
  // torchtitan's ChunkedCELoss (8 slices, every model's default since 786e26f, Apr 2026,
  // torchtitan#2937). The head's weight stays gathered through the loop and its gradient
  // accumulates over the slices before one reduce-scatter; the hidden states' gradient
  // accumulates in fp32.
  int loss_chunks = 1;
  // Eager RMSNorms as PyTorch >= 2.9 runs nn.RMSNorm / F.rms_norm on CUDA: one kernel forward
  // (_fused_rms_norm, pytorch#153666) and one backward (_fused_rms_norm_backward), where false is the
  // op-by-op Python reference (x.float().pow(2).mean(...), rsqrt, muls: Hugging Face's LlamaRMSNorm,
  // or nn.RMSNorm before 2.9). Compiled blocks fuse their norms either way.
  bool fused_rms_norm = false;
  // How the model's code turns q and k by their positions (training.rotary). Complex: viewed as
  // complex numbers in fp32 and multiplied by the complex frequencies (torchtitan's Llama 2/3 and
  // DeepSeek-V3 models, ComplexRoPE). Inductor does not generate code for complex operators (it
  // warns so; torchtitan#15), so a compiled block runs the multiply as the eager kernel, between its
  // casts to and from fp32: three kernels each way, as eager. CosSin: real cos and sin tables
  // (Hugging Face's rotate_half, torchtitan's Qwen3 and gpt-oss, OLMo-core, fms, KempnerForge since
  // 8f6a737), which a compiled block fuses into one kernel. Eager, both move the same bytes.
  enum class Rotary { Complex, CosSin } rotary = Rotary::CosSin;
  int logit_metrics = 0;             // training metrics computed from the logits after each micro-batch (eager, no grad)
  double checkpoint_fraction = 1;    // of the blocks, under activation checkpointing (1: every block)
  // torchtitan's op-level selective checkpointing (activation_checkpointing: selective_op): every
  // block keeps its input, the outputs of its odd-numbered matmuls and the attention kernel's (and
  // float8's amax), and re-runs the rest of its forward in backward: the even-numbered matmuls and
  // the element-wise kernels (kernel_list.cpp); its memory follows the saved tensors (units.cpp).
  bool selective_op = false;
  // Under selective_op, the attention kernel is re-run too: its SDPA backend's op is not in the
  // policy's save list. torchtitan puts cuDNN's SDPA first on Blackwell (torchtitan/models/
  // attention.py since 3b85aa31f, May 2025, torchtitan#1196), and its list named only the flash
  // and efficient backends until b39377f (Dec 2025, "add all SDPA backends to op_sac_save_list",
  // torchtitan#2095).
  bool selective_op_recomputes_attention = false;
  // Under selective_op, the policy's save list names aten.abs as well as aten.max ("for low
  // precision training, it's useful to always save the result of max(abs(tensor))"), so eager
  // float8 stores every abs its tensorwise scales take: a copy, as large as the tensor cast, of
  // each float8 Linear's input and (without float8's all-gather) of its weight. torchtitan until
  // torchtitan#820 (2025-02-06) removed abs from the list. Compiled, the partitioner keeps only
  // what the backward reads, the max.
  bool selective_op_saves_abs = false;
  // Under selective_op with expert parallelism, the all-to-alls are re-run too: the token counts'
  // exchange and the token rows out and back. torchtitan's save list keeps the outputs of
  // _c10d_functional.all_to_all_single (which the rows' autograd exchange dispatches to) since
  // torchtitan#1672 (Sept 2025) for DeepSeek-V3 and Llama 4, and for Qwen3 since #2357 (March 2026)
  // made one list for every model. The host's copy of the counts is taken as kept either way (the
  // policy's rule since #1672; the runs before it are not told apart).
  bool selective_op_recomputes_all_to_all = false;
  // A mixture of experts' router gate computed under torch.autocast(dtype=float32), as torchtitan's
  // TokenChoiceTopKRouter does since #2389 (2026-03-04): its bf16 input and weight cast to fp32, and
  // its GEMMs (forward, dgrad, wgrad) fp32 without TF32, which cuBLAS runs on CUDA cores
  // (torchtitan#4273 measured the SIMT sgemm, 4% of speed-of-light, at 8-9% of a step on B300).
  bool router_fp32 = false;
  // PyTorch >= 2.1's non-reentrant checkpoint stops re-running a block once every tensor its
  // backward saved is back (torch.utils.checkpoint early stop, on by default since pytorch#96866):
  // the block's last matmul, the MLP down projection, and the residual after it are not re-run.
  // false: reentrant checkpointing, or PyTorch <= 2.0, re-run the whole block.
  bool checkpoint_early_stop = true;
  // Whether a checkpointed block's re-run stops before its down projection: eager early stop, or
  // any compiled block, whose backward graph AOTAutograd's partitioner builds from what the
  // gradients need (it re-runs a checkpointed node only if the backward reads it; no gradient
  // reads the down projection's output), whatever early_stop says.
  bool rerun_stops_early() const { return checkpoint_early_stop || compiled; }
  // flash-attn's varlen kernels behind its bert_padding helpers (LLM Foundry's attn_impl: flash,
  // llmfoundry/models/layers/attention.py @5e85bd6): every layer gathers q, k and v into unpadded
  // rows (each unpad_input reads the mask back to the host twice: torch.nonzero and .item()) and
  // scatters the output back, instead of SDPA's layout copies.
  bool unpadded_attention = false;
  // torchao's Float8Linear (tensorwise dynamic scaling) on every block's Linear (not the output
  // head, which torchtitan's converter leaves in bf16): its three GEMMs in float8, each operand cast
  // first (models/kernel_list.cpp). float8_all_gather: FSDP2 all-gathers those weights already in
  // float8 (torchao's enable_fsdp_float8_all_gather), one byte per parameter, and skips their casts.
  bool float8_linears = false;
  bool float8_all_gather = false;
  // torch.autocast over fp32 parameters: each Linear's forward casts its fp32 weight to 16 bits
  // (autocast's cast cache lives for one forward, so a checkpointed block's re-run casts again) and
  // its backward casts the weight's 16-bit gradient back to fp32 for the fp32 parameter.
  bool autocast_casts = false;
  // How a tensor-parallel model was planned (training.tp_plan). Torchtitan: each attention and MLP
  // gathers its sequence-sharded input once for all its column-parallel Linears (PrepareModuleInput),
  // the embedding's output is reduce-scattered and the loss runs on each rank's vocabulary slice
  // (loss_parallel). PerLinear: parallelize_module with ColwiseParallel(input_layouts=Shard(1)) on
  // each of q, k, v, gate and up, so each gathers the input itself (and reduce-scatters its gradient);
  // the embedding stays replicated, and the head gathers the logits (output_layouts=Replicate) for a
  // cross-entropy over the whole vocabulary on every rank.
  enum class TpPlan { Torchtitan, PerLinear } tp_plan = TpPlan::Torchtitan;
  // torchtitan's plan takes the loss on each GPU's vocabulary slice (loss_parallel) under tensor
  // parallelism over `tensor_parallel` GPUs.
  bool loss_parallel(int tensor_parallel) const { return tensor_parallel > 1 && tp_plan == TpPlan::Torchtitan; }
  // Under torchtitan's plan, q_norm and k_norm (Qwen3) wrapped in NoParallel (training.tp_qk_norm:
  // no_parallel), as torchtitan's qwen3 plan did until pytorch/torchtitan#1870 (Oct 2025): the
  // style's output hook redistributes each norm's head-sharded output to Replicate, an all-gather
  // over the TP group, so rotary and GQA's repeat of k run on every head on every GPU, and SDPA
  // takes its heads back (a local copy); backward gathers dq and the repeated k's gradient.
  // false: the norms run on the local heads (SequenceParallel(sequence_dim=2) since #1870).
  bool qk_norm_no_parallel = false;
  // The TP group's heads q and k carry from their norms to the attention, in units of one GPU's.
  int qk_gathered(int tensor_parallel) const { return qk_norm_no_parallel ? tensor_parallel : 1; }
  // Documents packed into each sequence, each attending only within itself (block-causal masking:
  // torchtitan's default since pytorch/torchtitan#3571, June 2026): their length in tokens, the
  // token-weighted mean sum(L^2) / sum(L) of a real mix. 0: one causal sequence. Only kernels that
  // take document boundaries: FlexAttention's block mask, or flash-attn's varlen entry point
  // (flash2, flash3), which runs each document as its own sequence.
  double document_length = 0;
  bool documents(double seq) const { return document_length > 0 && document_length < seq; }
  // The attention takes PyTorch's (batch, heads, seq, head dim) layout: the caller transposes q, k,
  // v in and the output back (SDPA, FlexAttention, and torchtitan's varlen wrapper, which transposes
  // them back into rows). MosaicML's Triton kernel reads the (tokens, heads, head dim) rows as they are.
  bool head_major_layout() const { return attention != AttentionKernel::FlashTriton; }
  // Whether GQA's K and V are repeated to every query head before the call (training.repeat_kv);
  // unset: as the call's API has it, repeated before SDPA (torchtitan's repeat_kv until
  // pytorch/torchtitan#2259, Hugging Face's sdpa path), read shared by FlexAttention (enable_gqa),
  // flash-attn's varlen call and MosaicML's Triton kernel.
  std::optional<bool> repeat_kv;
  bool repeats_kv(const TransformerConfig& m, double seq) const {
    if (m.kv_heads >= m.heads) return false;
    if (repeat_kv) return *repeat_kv;
    return head_major_layout() && attention != AttentionKernel::Flex && !documents(seq);
  }
};

struct TrainingShape {
  int micro_batch = 1;             // sequences per GPU per micro-batch
  int seq_len = 0;                 // 0: the model's seq_len
  double activation_bytes = 2;     // bytes per activation element (bf16 = 2, fp32 = 4)
  bool activation_checkpointing = false;  // keep only the input of the checkpointed blocks
  bool flash_attention = true;     // no s^2 attention matrices kept (false also when impl.attention is Math)
  // The loss's and the attention's memory follow impl (cross_entropy, logit_metrics, attention).
  Implementation impl;
  // Tensor parallelism over this many GPUs, as torchtitan's sequence-parallel plan: each GPU holds
  // 1/t of the heads, the FFN and the vocabulary, and the norms and residual adds run on 1/t of the
  // tokens (fsdp_units gives one GPU's share: tensor_parallel_shard).
  int tensor_parallel = 1;
  // Context parallelism over this many GPUs (PyTorch's context_parallel with load balancing): each
  // holds 1/c of every sequence's tokens, and its attention sees every key (fsdp_units gives one
  // GPU's share: its tokens, and its query shard of each attention call).
  int context_parallel = 1;
  // Expert parallelism over this many GPUs (torchtitan's expert_parallel_degree): a mixture of
  // experts' routed experts split among them, E / ep each; every GPU keeps its own tokens, which
  // travel to their experts' GPUs and back in all-to-alls (sim/model_parallel.hpp).
  int expert_parallel = 1;
  // Under expert parallelism, the rows the busiest GPU's experts receive over the balanced share,
  // T x experts_per_token (1: balanced routing). Every GPU waits for it at each all-to-all, so its
  // grouped GEMMs, the permutations around them and what it keeps set the step.
  double expert_imbalance = 1;
  // The rows this GPU's experts run a micro-batch: T k, or the busiest GPU's under expert parallelism.
  double expert_rows(double tokens, int experts_per_token) const {
    return tokens * experts_per_token * (expert_parallel > 1 ? expert_imbalance : 1.0);
  }
};

// One GPU's share of the model under tensor parallelism over t GPUs: heads, KV heads, FFN and
// vocabulary divided by t, the head width kept. Throws InputError naming training.tensor_parallel
// when t does not divide them.
TransformerConfig tensor_parallel_shard(const TransformerConfig& m, int t);

// Whether block `layer` of `layers` is checkpointed: every block under full checkpointing, else
// the fraction impl.checkpoint_fraction spread evenly (0.5: every second block, as fms-fsdp's
// selective_checkpointing and torchtitan's selective layer AC do).
bool checkpointed(const TrainingShape& shape, int layer);

struct UnitKernels;  // models/kernel_list.hpp

struct FsdpUnit {
  std::string name;            // "layers.3.mlp.c_fc", "block.3", "root"
  UnitKind kind = UnitKind::Root;
  int layer = -1;              // transformer block index, -1 outside the blocks
  std::int64_t params = 0;
  // Of `params`, how many sit in attention, MLP, embedding/head and norms
  // (a Block unit holds several; a Size unit exactly one).
  std::int64_t attention_params = 0, mlp_params = 0, embedding_params = 0, norm_params = 0;
  // Of `params`, a mixture of experts' routed experts this GPU holds (all of them, or 1/ep under
  // expert parallelism): FSDP shards them over the expert shard group when there is one.
  std::int64_t expert_params = 0;
  // Work per micro-batch on one GPU. GEMM FLOPs are 2*m*n*k; backward is
  // grad-input plus grad-weight GEMMs (2x forward) plus attention's backward.
  // With activation checkpointing a block's backward_* include its forward recompute.
  double forward_flops = 0;
  double backward_flops = 0;
  double gemm_fraction = 1;    // share of forward_flops in GEMMs (the rest is attention core / element-wise)
  int gemm_width = 0;          // the GEMMs' inner size (the model's hidden size); 0 when unknown
  double backward_gemm_fraction = 1;  // the same for backward_flops (attention's backward weighs more)
  // Element-wise and norm traffic per micro-batch (bytes moved through HBM), forward and backward.
  double forward_memory_bytes = 0;
  double backward_memory_bytes = 0;
  // Activations this unit keeps for backward, per micro-batch (checkpointing applied; by kernel
  // implementation: what the attention kernel and the loss save, units.cpp's table).
  double activation_bytes = 0;
  // Memory its backward allocates on top of them while it runs: a checkpointed block's
  // recomputed activations, the gradients in flight inside a block, the loss's logit gradients.
  double backward_transient_bytes = 0;
  // Kernels its forward and backward launch in eager PyTorch (the host issues
  // each); with activation checkpointing the backward's include the recompute.
  int forward_kernels = 0;
  int backward_kernels = 0;
  // The kernels PyTorch runs for this unit's forward and backward, with their shapes; shared by
  // every unit of the same kind (built once per model, not per unit or rank). Null for units
  // built by hand, which sim::unit_compute times by their FLOPs instead.
  std::shared_ptr<const UnitKernels> kernels;
};

// Units in forward execution order (the root unit first, as FSDP gathers it first).
// Module layout under WrapPolicy::Size follows the family the shape implies: a
// gated MLP or GQA means Llama (layers.<i>.attn.q/k/v/o, mlp.gate/up/down,
// rotary on q and k); otherwise GPT-2/MPT (attn.c_attn/c_proj, mlp.c_fc/c_proj).
// Tied models have no lm_head unit: the head's work is charged to wte.
// Under WrapPolicy::Torchtitan the units are tok_embeddings, layers.<i> and
// norm+output (untied models only, as torchtitan's Llama).
// The FLOP, memory-traffic and activation conventions are listed in units.cpp.
// Throws InputError for an invalid model or shape.
std::vector<FsdpUnit> fsdp_units(const TransformerConfig& m, WrapPolicy policy, const TrainingShape& shape);

}  // namespace tagcsim::models
