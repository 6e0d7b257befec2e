// What a CUDA engine holds (its stream, the device scratch, the pinned word
// the host reads counters into), each owned by its own RAII handle. If the
// constructor fails half-way, say at the scratch's cudaMalloc, the handles
// already made release what they hold; nothing leaks.
//
// Written against a small runtime policy `Api` (no CUDA headers here): the
// engine uses the CUDA runtime (engine.cu), and the host tests use a fake that
// counts live resources and fails the k-th acquisition, so the cleanup is
// tested on machines without a GPU. `fail_at` is the same fault injection for
// the real runtime (EngineOptions::fail_acquisition).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>

namespace tagcsim::kernels::cuda {

// Api must provide (all static):
//   using Stream = <pointer type>;
//   Stream create_stream();                      void destroy_stream(Stream) noexcept;
//   void* device_alloc(std::size_t);             void device_free(void*) noexcept;
//   void* host_alloc(std::size_t);               void host_free(void*) noexcept;
//   [[noreturn]] void fail(const std::string&);  // throws the runtime's error
template <class Api>
class EngineResources {
  struct StreamRelease {
    void operator()(typename Api::Stream s) const noexcept { Api::destroy_stream(s); }
  };
  struct DeviceRelease {
    void operator()(void* p) const noexcept { Api::device_free(p); }
  };
  struct HostRelease {
    void operator()(void* p) const noexcept { Api::host_free(p); }
  };

 public:
  // Acquires, in order: the stream (1), the device scratch (2), the pinned
  // word (3). fail_at = k > 0 makes acquisition k fail as the runtime would.
  EngineResources(std::size_t scratch_bytes, std::size_t pinned_bytes, int fail_at = 0) : fail_at_(fail_at) {
    stream_.reset(acquire(1, "cudaStreamCreateWithFlags", [] { return Api::create_stream(); }));
    scratch_.reset(acquire(2, "cudaMalloc(scratch)", [&] { return Api::device_alloc(scratch_bytes); }));
    pinned_.reset(acquire(3, "cudaMallocHost(counter)", [&] { return Api::host_alloc(pinned_bytes); }));
  }

  typename Api::Stream stream() const { return stream_.get(); }
  void* scratch() const { return scratch_.get(); }
  void* pinned() const { return pinned_.get(); }

 private:
  template <class F>
  auto acquire(int k, const char* what, F make) {
    if (k == fail_at_) Api::fail(std::string("injected failure of acquisition ") + std::to_string(k) + " (" + what + ")");
    return make();
  }

  int fail_at_;
  // Released in reverse order: pinned word, scratch, stream.
  std::unique_ptr<std::remove_pointer_t<typename Api::Stream>, StreamRelease> stream_;
  std::unique_ptr<void, DeviceRelease> scratch_;
  std::unique_ptr<void, HostRelease> pinned_;
};

}  // namespace tagcsim::kernels::cuda
