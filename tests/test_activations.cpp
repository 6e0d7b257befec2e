// Activation memory: what each unit keeps for its backward (and holds during it), by
// implementation: eager, checkpointed, torchtitan's per-op policy, compiled, and the loss.
// Expected numbers are worked out by hand in the comments next to them.
#include "models/model.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::models;

TEST_CASE("activations: 32*s*b*h bytes per GPT-2 block in bf16 plus the log-sum-exp, the block input with checkpointing") {
  auto m = preset("gpt2-124m");
  TrainingShape shape;  // b = 1, s = 1024, 2 bytes, FlashAttention-2
  auto blocks = fsdp_units(m, WrapPolicy::Block, shape);
  // Per token: ln_1 and ln_2 keep their input and output (4h), attention Q, K, V and O (4h), GELU its
  // input and output (2f = 8h): 16h elements, 32h bytes (Korthikanti's 34 s b h less the two 1-byte
  // dropout masks: p = 0 keeps none); and the fp32 log-sum-exp of 12 heads, 48 bytes.
  CHECK(blocks[1].activation_bytes == doctest::Approx(1024.0 * (32 * 768 + 4 * 12)));  // 25,214,976
  // Outside the blocks: the final norm's input and output (2h, bf16) and the fp32 log-softmax of the
  // logits the eager loss keeps (4V bytes per token); the embedding output is block 0's input.
  CHECK(blocks[0].activation_bytes == doctest::Approx(1024.0 * (2 * 768 * 2 + 4 * 50257)));
  // Its backward holds the fp32 gradients of the log-softmax and the logits on top: 8V bytes per token.
  CHECK(blocks[0].backward_transient_bytes == doctest::Approx(1024.0 * 8 * 50257));

  shape.activation_bytes = 4;  // fp32 doubles the tensors, not the fp32 log-sum-exp
  CHECK(fsdp_units(m, WrapPolicy::Block, shape)[1].activation_bytes == doctest::Approx(1024.0 * (64 * 768 + 48)));

  shape.activation_bytes = 2;
  shape.flash_attention = false;  // + the softmax output, a s^2 b elements: 2 * 12 * 1024^2 bytes
  CHECK(fsdp_units(m, WrapPolicy::Block, shape)[1].activation_bytes ==
        doctest::Approx(1024.0 * (32 * 768 + 48) + 2.0 * 12 * 1024 * 1024));

  shape.flash_attention = true;
  shape.activation_checkpointing = true;
  auto ck = fsdp_units(m, WrapPolicy::Block, shape);
  CHECK(ck[1].activation_bytes == doctest::Approx(1024.0 * 768 * 2));  // 1,572,864
  // The backward recomputes the forward but, with PyTorch >= 2.1's early stop (the default), the
  // MLP's down projection (2 T f h = 2 x 1024 x 3072 x 768 FLOPs) and its residual add (3 h bf16
  // elements a token); reentrant checkpointing re-runs all of it.
  const double T = 1024, h = 768, f = 3072;
  CHECK(ck[1].backward_flops == doctest::Approx(blocks[1].backward_flops + blocks[1].forward_flops - 2 * T * f * h));
  CHECK(ck[1].backward_memory_bytes ==
        doctest::Approx(blocks[1].backward_memory_bytes + blocks[1].forward_memory_bytes - 3 * h * 2 * T));
  shape.impl.checkpoint_early_stop = false;
  const auto whole = fsdp_units(m, WrapPolicy::Block, shape);
  CHECK(whole[1].backward_flops == doctest::Approx(blocks[1].backward_flops + blocks[1].forward_flops));
  CHECK(whole[1].backward_memory_bytes ==
        doctest::Approx(blocks[1].backward_memory_bytes + blocks[1].forward_memory_bytes));
  shape.impl.checkpoint_early_stop = true;
  CHECK(ck[0].activation_bytes == doctest::Approx(blocks[0].activation_bytes));  // the root is not checkpointed

  // checkpointing: 0.5 takes every second block (1, 3, ...): half the blocks keep their input only.
  shape.impl.checkpoint_fraction = 0.5;
  auto half = fsdp_units(m, WrapPolicy::Block, shape);
  CHECK(half[1].activation_bytes == doctest::Approx(blocks[1].activation_bytes));  // block 0 is not checkpointed
  CHECK(half[2].activation_bytes == doctest::Approx(1024.0 * 768 * 2));
  double all = 0;
  for (const auto& u : half) all += u.activation_bytes;
  CHECK(all == doctest::Approx(blocks[0].activation_bytes + 6 * blocks[1].activation_bytes + 6 * 1024.0 * 768 * 2));
}

TEST_CASE("activations follow the kernels: RMSNorm's fp32 copy, GQA's repeated K and V, Triton's own layout") {
  // Llama 3.1 8B (h 4096, kv 1024, f 14336, 32 heads), 2 x 4096 tokens in bf16, FlashAttention-2 via SDPA.
  // Per token: each Python RMSNorm keeps the fp32 copy of its input, the normalized tensor and its
  // output, (4 + 2 + 2) h bytes, twice; attention Q, K and V repeated to 32 heads (torchtitan's
  // repeat_kv), O: 4h elements; SwiGLU g, silu(g), u, their product: 4f; the log-sum-exp 4 x 32 bytes.
  TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4096;
  const double T = 8192, h = 4096, f = 14336;
  const auto b = fsdp_units(preset("llama3.1-8b"), WrapPolicy::Block, shape)[1];
  CHECK(b.activation_bytes == doctest::Approx(T * (2 * 8 * h + 2 * 4 * h + 2 * 4 * f + 128)));  // 213,120 B/token
  // MosaicML's Triton kernel takes K and V as they are: 2 kv instead of 2 h.
  shape.impl.attention = AttentionKernel::FlashTriton;
  const auto t = fsdp_units(preset("llama3.1-8b"), WrapPolicy::Block, shape)[1];
  CHECK(b.activation_bytes - t.activation_bytes == doctest::Approx(T * 2 * 2 * (4096 - 1024)));
}

TEST_CASE("selective_op: every block keeps its input, its odd matmuls' outputs and the attention kernel's") {
  // Llama 3.1 8B (h 4096, kv 1024, f 14336, 32 heads), 2 x 4096 tokens in bf16. torchtitan's op-level
  // policy saves the outputs of matmuls 1, 3, 5, 7 of the block (wq: h, wv: kv, w1: f, w2: h), the
  // attention kernel's O (h) and fp32 log-sum-exp (4 x 32 bytes), with the block input (h).
  TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4096;
  const double T = 8192, h = 4096, kv = 1024, f = 14336;
  const auto full = fsdp_units(preset("llama3.1-8b"), WrapPolicy::Block, shape)[1];
  shape.activation_checkpointing = true;
  shape.impl.selective_op = true;
  const auto units = fsdp_units(preset("llama3.1-8b"), WrapPolicy::Block, shape);
  const double saved = T * (2 * (h + h + kv + f + h + h) + 128);  // 63,616 bytes a token
  for (int b : {1, 2}) {  // every block, not every second one
    CAPTURE(b);
    CHECK(units[b].activation_bytes == doctest::Approx(saved));
    // Its backward rebuilds the rest of the block's tensors, and holds its gradients in flight.
    CHECK(units[b].backward_transient_bytes ==
          doctest::Approx(full.activation_bytes - saved + full.backward_transient_bytes));
  }
  // Every block re-runs its even matmuls (wk, wo, w3; w2 would be saved anyway), not the attention.
  for (int b : {1, 2})
    CHECK(units[b].backward_flops == doctest::Approx(full.backward_flops + 2 * T * h * (kv + h + f)));
  // Compiled, the partitioner drops the one MUST_SAVE output no backward op reads: the down
  // projection's (h), which only the residual add uses.
  shape.impl.compiled = true;
  for (int b : {1, 2})
    CHECK(fsdp_units(preset("llama3.1-8b"), WrapPolicy::Block, shape)[b].activation_bytes ==
          doctest::Approx(saved - T * 2 * h));
  shape.impl.compiled = false;
  // Where the policy's save list does not name the attention kernel's op (cuDNN's SDPA in
  // torchtitan before b39377f), O and the log-sum-exp are not kept, and the kernel is re-run:
  // 4 * (2 x 32 heads) * 4096^2 * 128 / 2 FLOPs, causal.
  shape.impl.selective_op_recomputes_attention = true;
  const auto cudnn = fsdp_units(preset("llama3.1-8b"), WrapPolicy::Block, shape);
  for (int b : {1, 2}) {
    CAPTURE(b);
    CHECK(cudnn[b].activation_bytes == doctest::Approx(saved - T * (2 * h + 128)));
    CHECK(cudnn[b].backward_flops - units[b].backward_flops == doctest::Approx(4.0 * 64 * 4096.0 * 4096 * 128 / 2));
  }
}

TEST_CASE("a compiled block keeps every input a GEMM or the attention kernel reads in backward") {
  // AOTAutograd's partitioner never recomputes a tensor that a backward op it cannot fuse reads
  // (ban_recompute_materialized_backward), and every matmul's weight gradient reads its input.
  // Llama 2 70B (h 8192, kv 1024, f 28672, 64 heads, RMSNorm), 2 x 4096 tokens in bf16, SDPA handed
  // GQA's K and V repeated to every head (the default call). Per token: block input and residual
  // (2h), the two norms' outputs (2h), q and the repeated k and v (3h), O (h), g, u and their product
  // (3f) in 2 bytes; two fp32 rstd (8 bytes) and 64 fp32 log-sum-exps (256 bytes).
  TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4096;
  const double T = 8192, h = 8192, kv = 1024, f = 28672;
  const auto eager = fsdp_units(preset("llama2-70b"), WrapPolicy::Block, shape)[1];
  shape.impl.compiled = true;
  const auto compiled = fsdp_units(preset("llama2-70b"), WrapPolicy::Block, shape)[1];
  CHECK(compiled.activation_bytes == doctest::Approx(T * (2 * (8 * h + 3 * f) + 8 + 256)));  // 303,368 B
  CHECK(compiled.activation_bytes < 0.75 * eager.activation_bytes);  // eager: 426,240 B a token
  // A kernel that reads GQA's K and V as they are keeps them kv wide.
  shape.impl.repeat_kv = false;
  CHECK(fsdp_units(preset("llama2-70b"), WrapPolicy::Block, shape)[1].activation_bytes ==
        doctest::Approx(T * (2 * (6 * h + 2 * kv + 3 * f) + 8 + 256)));  // 274,696 B
  shape.impl.repeat_kv = std::nullopt;
  // A checkpointed block keeps its input either way. Its backward re-runs the forward, and what the
  // re-run holds while the block's backward runs is, compiled, only what a compiled block keeps.
  shape.activation_checkpointing = true;
  const auto compiled_ac = fsdp_units(preset("llama2-70b"), WrapPolicy::Block, shape)[1];
  CHECK(compiled_ac.activation_bytes == doctest::Approx(T * h * 2));
  shape.impl.compiled = false;
  const auto eager_ac = fsdp_units(preset("llama2-70b"), WrapPolicy::Block, shape)[1];
  CHECK(eager_ac.activation_bytes == doctest::Approx(T * h * 2));
  // (less the block input, which the checkpoint holds already)
  CHECK(eager_ac.backward_transient_bytes - compiled_ac.backward_transient_bytes ==
        doctest::Approx(eager.activation_bytes - (compiled.activation_bytes - T * h * 2)));
}

TEST_CASE("a compiled block with per-head q and k norms also keeps q and k before them") {
  // The norms' backward reads their inputs, which are matmul outputs and never recomputed.
  auto m = preset("llama2-7b");  // h 4096, MHA (kv = h), f 11008, 32 heads
  TrainingShape shape;
  shape.seq_len = 4096;
  shape.impl.compiled = true;
  const double T = 4096, h = 4096, f = 11008;
  const double plain = fsdp_units(m, WrapPolicy::Block, shape)[1].activation_bytes;
  CHECK(plain == doctest::Approx(T * (2 * (6 * h + 2 * h + 3 * f) + 8 + 4 * 32)));
  m.qk_norm = true;
  const double normed = fsdp_units(m, WrapPolicy::Block, shape)[1].activation_bytes;
  // q and k before their norms: 2h in 2 bytes a token.
  CHECK(normed - plain == doctest::Approx(T * 2 * 2 * h));
}

TEST_CASE("the loss keeps what its implementation saves") {
  // GPT-2 124M's head, 1024 tokens, vocabulary 50257, bf16 logits.
  const double T = 1024, V = 50257, norm = 2 * 768 * 2;
  TrainingShape shape;
  const auto eager = fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0];
  CHECK(eager.activation_bytes == doctest::Approx(T * (norm + 4 * V)));  // fp32 log-softmax
  CHECK(eager.backward_transient_bytes == doctest::Approx(T * 8 * V));   // its fp32 gradients
  // Training metrics on the logits (Composer keeps the model's outputs until they ran): the bf16 logits stay.
  shape.impl.logit_metrics = 2;
  CHECK(fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0].activation_bytes ==
        doctest::Approx(T * (norm + 4 * V + 2 * V)));
  // F.cross_entropy on the bf16 logits without a cast (a model kept in bf16): log_softmax keeps its
  // bf16 output, and the backward holds the bf16 gradients of that output and of the logits.
  shape.impl.cross_entropy = models::Implementation::CrossEntropy::Bf16;
  shape.impl.logit_metrics = 0;
  const auto bf16 = fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0];
  CHECK(bf16.activation_bytes == doctest::Approx(T * (norm + 2 * V)));
  CHECK(bf16.backward_transient_bytes == doctest::Approx(T * 4 * V));
  shape.impl.cross_entropy = models::Implementation::CrossEntropy::Fp32;
  shape.impl.logit_metrics = 2;
  // flash-attn's fused cross-entropy saves the bf16 logits and writes their gradient into a new tensor.
  shape.impl.cross_entropy = models::Implementation::CrossEntropy::Fused;
  const auto fused = fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0];
  CHECK(fused.activation_bytes == doctest::Approx(T * (norm + 2 * V)));
  CHECK(fused.backward_transient_bytes == doctest::Approx(T * 2 * V));
  // Compiling the model leaves the loss's memory to its implementation (torchtitan compiled only the
  // blocks until Apr 2025) ...
  shape.impl.cross_entropy = models::Implementation::CrossEntropy::Fp32;
  shape.impl.logit_metrics = 0;
  shape.impl.compiled = true;
  CHECK(fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0].activation_bytes ==
        doctest::Approx(eager.activation_bytes));
  // ... and the compiled loss keeps what the fused kernel keeps: the bf16 logits, a new bf16 gradient.
  shape.impl.compiled_loss = true;
  const auto compiled = fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0];
  CHECK(compiled.activation_bytes == doctest::Approx(T * (norm + 2 * V)));
  CHECK(compiled.backward_transient_bytes == doctest::Approx(T * 2 * V));
}

TEST_CASE("loss_chunks: one slice's logits live at a time, beside the hidden states' fp32 gradient") {
  // GPT-2 124M's head, 1024 tokens, vocabulary 50257, eager fp32 loss, torchtitan's 8 slices: the saved
  // log-softmax and the backward's two fp32 gradients of 128 tokens, plus 4 bytes a hidden element of
  // the whole sequence (GradAccumulator).
  const double T = 1024, V = 50257, h = 768, norm = 2 * 768 * 2;
  TrainingShape shape;
  shape.impl.loss_chunks = 8;
  const auto chunked = fsdp_units(preset("gpt2-124m"), WrapPolicy::Block, shape)[0];
  CHECK(chunked.activation_bytes == doctest::Approx(T * (norm + 4 * V / 8 + 4 * h)));
  CHECK(chunked.backward_transient_bytes == doctest::Approx(T * 8 * V / 8));
}
