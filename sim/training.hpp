// How the model is trained: the FSDP settings a PyTorch user chooses.
#pragma once

#include "models/model.hpp"

#include <string>

namespace tagcsim::sim {

enum class Sharding { FullShard, ShardGradOp, HybridShard };
enum class BackwardPrefetch { Pre, Post, None };
enum class Dtype { BF16, FP16, FP32 };

double bytes_of(Dtype d);
const char* to_string(Sharding s);
const char* to_string(Dtype d);

struct Training {
  Sharding sharding = Sharding::FullShard;
  int hybrid_shard_gpus = 0;        // HYBRID_SHARD: GPUs per shard group (0: one node)
  models::WrapPolicy wrap = models::WrapPolicy::Block;
  int micro_batch = 1;              // sequences per GPU per micro-batch
  int seq_len = 0;                  // 0: the model's
  int grad_accumulation = 1;        // micro-batches per step
  bool no_sync = true;              // skip the reduce-scatter on all but the last micro-batch
  Dtype param_dtype = Dtype::BF16;  // all-gathered parameters and compute
  Dtype reduce_dtype = Dtype::FP32; // reduce-scatter of gradients
  bool activation_checkpointing = false;
  bool tf32 = false;                // fp32 matmuls on tensor cores (torch.backends.cuda.matmul.allow_tf32)
  int max_inflight_all_gathers = 2; // FSDP's limit_all_gathers rate limiter
  BackwardPrefetch backward_prefetch = BackwardPrefetch::Pre;
  models::Implementation impl;      // attention kernel, torch.compile, fused loss, checkpointed share
};

}  // namespace tagcsim::sim
