// An nccl-tests log for the tests that parse one or fit to one: two hosts x two GPUs, an all-gather
// of 1-4 KiB, as nccl-tests >= 2.13 prints it (trimmed; one NCCL INFO line among the devices).
#pragma once

inline constexpr const char* kTwoByTwoAllGatherLog = R"(# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1001 on     node-a device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1002 on     node-a device  1 [0x0a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  2001 on     node-b device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  2002 on     node-b device  1 [0x0a] NVIDIA H100 80GB HBM3
node-a:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024            64     float    none      -1    20.50    0.05    0.04      0    19.80    0.05    0.04      0
        2048           128     float    none      -1    21.00    0.10    0.07      0    21.40    0.10    0.07      0
        4096           256     float    none      -1    22.00    0.19    0.14      0    22.10    0.19    0.14      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.08
)";
