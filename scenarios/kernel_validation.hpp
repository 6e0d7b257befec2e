// How well a device profile times kernels it was not built from (`tagcsim validate --kernels`):
// every measured GEMM and attention point of a shipped profile predicted from the same profile
// without that point's source, and every GEMM and attention point of another profile (one
// `tagcsim calibrate box` measured) predicted by the shipped profile that serves its GPU. The
// fitted training scales are left out: this checks the profile's interpolation, not the fit to
// FSDP throughput.
#pragma once

#include "sim/kernel_profile.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

struct KernelCheck {
  std::string profile;  // the profile that predicts ("device-h100-sxm")
  std::string kind;     // "gemm bf16", "gemm fp8", "attention"
  std::string shape;    // "4096 x 4096 x 4096", "flash2 bwd causal hd128 seq 4096"
  std::string source;   // the measured point's source
  double measured_seconds = 0;   // for attention: seconds per FLOP x 1e12 (1 / TFLOP/s)
  double predicted_seconds = 0;  // 0: nothing left to predict it from
  bool predicted() const { return predicted_seconds > 0; }
  double error() const { return predicted_seconds / measured_seconds - 1; }  // model time / measured - 1
};

// The source a GEMM point belongs to: its id without the shape ("gemm-h100-flexgen-fp16-8192" ->
// "gemm-h100-flexgen-fp16"); a box measurement ("measured: tagcsim calibrate box, <date>, ...") is
// one source per date.
std::string gemm_point_source(const std::string& point_source);

// Each GEMM point of `p` (16-bit and float8), predicted from `p` without the points of its source.
std::vector<KernelCheck> gemm_leave_one_source_out(const sim::KernelProfile& p);

// The source an attention point belongs to: its GPU and reference ("attn-h100-k02-fa2-fwdbwd-
// causal-hd64-s512" -> "attn-h100-k02"), or the box run that measured it.
std::string attention_point_source(const std::string& point_source);

// Each measured attention point of `p`, predicted from `p` without the points of its source (and
// without the derived points, "model: ...", that name it): another source's curves of the same
// kernel, another direction combined with them, another head dim or causality. A kernel no other
// source measured is left unpredicted. The profile's backward/forward rate ratio stays as shipped.
std::vector<KernelCheck> attention_leave_one_source_out(const sim::KernelProfile& p);

// Each GEMM and attention point `measured` measured itself (its source begins "measured:", as
// `tagcsim calibrate box` writes it), predicted by `shipped` as it is. Attention curves of a kernel
// `shipped` has no curves for are left unpredicted.
std::vector<KernelCheck> predict_measured(const sim::KernelProfile& shipped, const sim::KernelProfile& measured);

// One table of every check, then median / p90 / max |error| per profile and kind.
std::string format_kernel_checks(const std::string& title, const std::vector<KernelCheck>& checks);

}  // namespace tagcsim::scenarios
