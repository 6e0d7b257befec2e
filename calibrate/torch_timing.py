"""CUDA-event timing shared by the PyTorch measurement scripts beside it (torch-fsdp-step.py and
its torch_kernel_sweeps.py, torch-flex-attention.py): the median of `iters` calls after `warmup`, each call's own GPU time."""
import statistics

import torch


def cuda_time(fn, warmup=3, iters=10):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)
