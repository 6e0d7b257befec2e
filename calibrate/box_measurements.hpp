// What `tagcsim calibrate box` measured on a local GPU box, as one file.
//
// The CUDA side (calibrate/box/) fills a BoxMeasurements and writes it as
// measurements.yaml (format tagcsim-box-measurements/1); everything after that
// (fits, the device profile, the cluster file, the report) reads only this
// record, so it runs and is tested on machines without a GPU, from recorded or
// synthetic files.
#pragma once

#include "sim/collective.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tagcsim::calibrate {

// One GPU of the box, as the CUDA runtime reports it.
struct BoxGpu {
  int index = 0;
  std::string name;          // "NVIDIA H200"
  int sm = 0;                // compute capability x 10 (90 for Hopper)
  int sms = 0;               // multiprocessors
  double memory_bytes = 0;
  double sm_clock_mhz = 0;   // peak (boost) clock
  double memory_clock_mhz = 0;
  int bus_width_bits = 0;
  std::string pci;           // bus id
};

// How two GPUs of the box reach each other.
struct BoxLink {
  int a = 0, b = 0;
  bool p2p = false;          // cudaDeviceCanAccessPeer
  int nvlinks = -1;          // active NVLinks from a to b (NVML); -1 when unknown
  int performance_rank = -1; // cudaDevP2PAttrPerformanceRank; -1 when unknown
};

// The box: what each output file records about where it was measured.
struct BoxInfo {
  std::vector<BoxGpu> gpus;
  std::vector<BoxLink> links;
  std::string driver;        // NVIDIA driver ("580.159.03"), or "unknown"
  std::string cuda_driver;   // CUDA version the driver supports ("13.0")
  std::string cuda_runtime;  // CUDA runtime this binary was built with
  std::string nccl;          // "2.28.9", or "not found: <why>"
  std::string cublaslt;
  std::string cudnn;
  std::string host;          // CPU model, cores
  std::string date;          // UTC, ISO 8601
  int nvlinks_between(int a, int b) const;  // -1 when unknown
  int sms() const { return gpus.empty() ? 0 : gpus.front().sms; }  // the measured GPU's; 0 when none
  // Pairs of GPUs joined by NVLink, over all pairs: 1 on an NVSwitch board, 0 on PCIe.
  double nvlink_pair_fraction() const;
};

// NCCL collective over `ranks` (local GPU indices), median of the timed runs.
struct NcclSample {
  std::string op;            // all_gather, reduce_scatter, all_reduce, reduce, broadcast
  std::vector<int> ranks;
  double bytes = 0;          // nccl-tests "size": the full buffer S
  double time_s = 0;         // median of the iterations, the slowest GPU of each
  double time_min_s = 0;
  int iterations = 0;
  long wrong = 0;            // elements that differ from the expected result (nccl-tests' #wrong)
};

struct GemmSample {
  double m = 0, n = 0, k = 0;  // C[m x n] = A[m x k] B[k x n]
  std::string dtype;           // bf16, fp16, tf32, fp8 (e4m3 in, bf16 out)
  double seconds = 0;          // median
  std::string origin;          // "scenario: attn.qkv dgrad", "grid"
  double flops() const { return 2 * m * n * k; }
};

struct AttentionSample {
  std::string kernel;          // "math-blocked" (see calibrate/box/attention.cu)
  std::string direction;       // fwd, bwd
  bool causal = true;
  double batch_heads = 0, seq = 0, head_dim = 0;
  double seconds = 0;
  std::string origin;
  double flops() const;  // as models::Kernel counts an attention call (the flash-attention convention)
};

struct MemorySample {
  std::string kernel;          // copy, scale, add, norm
  double bytes = 0;            // read + written
  double seconds = 0;
};

// A GEMM timed alone and beside a kernel of `blocks` spinning thread blocks (NCCL's blocks hold
// their SMs for as long as a collective is in flight): how much of an SM one such block takes
// from the GEMM.
struct SmHoldSample {
  int blocks = 0;              // spinning blocks, one per SM as NCCL's channels are
  int threads = 0;             // per block (NCCL's Simple protocol: 512)
  double m = 0, n = 0, k = 0;  // the bf16 GEMM
  double alone_s = 0;          // median GEMM time alone
  double beside_s = 0;         // ... while the blocks spin
};

struct BoxMeasurements {
  BoxInfo box;
  std::string command;
  bool quick = false;
  std::vector<NcclSample> nccl;
  std::vector<GemmSample> gemm;
  std::vector<AttentionSample> attention;
  std::vector<MemorySample> memory;
  std::vector<SmHoldSample> sm_holds;  // empty in files written before it was measured
  double empty_kernel_s = 0;   // GPU time of an empty kernel launched back to back (the launch floor)
  double issue_s = 0;          // host CPU time of one cudaLaunchKernel
  std::string tagc_bench;      // the kernels bench JSON written beside (file name), "" if not run
  std::vector<std::string> notes;  // what was skipped and why
};

std::string measurements_yaml(const BoxMeasurements& m);
// InputError with file:line and key for a malformed file.
BoxMeasurements parse_measurements(const std::string& text, const std::string& file);
BoxMeasurements load_measurements(const std::string& path);

// A short file-name stem for the GPU: "h200", "h100-80gb-hbm3", "a100-sxm4-40gb".
std::string gpu_slug(const std::string& gpu_name);

}  // namespace tagcsim::calibrate
