// CUDA runtime calls checked (std::runtime_error naming the call), and the device resources the
// measurements hold, released whatever happens (RAII).
#pragma once

#include <cuda_runtime_api.h>

#include "common/quantiles.hpp"

#include <string>
#include <utility>
#include <vector>

namespace tagcsim::calibrate::box {

[[noreturn]] void throw_cuda(cudaError_t err, const char* call, const char* file, int line);
#define BOX_CUDA(call)                                                  \
  do {                                                                  \
    cudaError_t box_err_ = (call);                                      \
    if (box_err_ != cudaSuccess) throw_cuda(box_err_, #call, __FILE__, __LINE__); \
  } while (0)

// Device memory of one GPU.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) BOX_CUDA(cudaMalloc(&p_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
  }
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { BOX_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { BOX_CUDA(cudaEventCreate(&e_)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { BOX_CUDA(cudaEventRecord(e_, s)); }
  // Seconds from `start` to this event (both recorded on the same GPU, both complete).
  double since(const Event& start) const;

 private:
  cudaEvent_t e_ = nullptr;
};

// Median of timed runs, in seconds.
using tagcsim::median;

// The median time of `iters` runs of `call` on stream `s` (CUDA events), after `warmup` untimed ones.
template <class F>
double time_median(int warmup, int iters, cudaStream_t s, F&& call) {
  for (int i = 0; i < warmup; ++i) call();
  Event start, stop;
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    start.record(s);
    call();
    stop.record(s);
    BOX_CUDA(cudaEventSynchronize(stop.get()));
    t.push_back(stop.since(start));
  }
  return median(t);
}

}  // namespace tagcsim::calibrate::box
