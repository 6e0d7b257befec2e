// The CUDA engine: device memory, one stream, events for timing, and the
// stages forwarded to the launchers. Constructed only when a device exists.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_engine.hpp"
#include "kernels/cuda/resources.hpp"

#include <atomic>
#include <string>

namespace tagcsim::kernels::cuda {

void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so later calls can report their own
  throw CudaError(std::string("CUDA error: ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

std::size_t read_counter(const Ctx& c) {
  TAGC_CUDA(cudaMemcpyAsync(c.pinned, &c.scratch->counter, sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                            c.stream));
  TAGC_CUDA(cudaStreamSynchronize(c.stream));
  return std::size_t(*c.pinned);
}

std::string device_problem() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    // The runtime reports a missing driver as an insufficient one; tell them apart.
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cudaGetLastError();
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    if (err == cudaErrorInsufficientDriver && driver == 0)
      return "no usable CUDA device (no NVIDIA driver: libcuda.so.1 cannot be loaded)";
    if (err == cudaErrorInsufficientDriver)
      return "no usable CUDA device (the NVIDIA driver supports CUDA " + version(driver) +
             ", older than the CUDA runtime " + version(runtime) + " this was built with)";
    return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " +
           cudaGetErrorString(err) + ")";
  }
  if (count == 0) return "no CUDA device found (cudaGetDeviceCount returned 0)";
  return "";
}

namespace {

std::atomic<long> g_live{0};  // resources held by engines (live_resources)

// The CUDA runtime as EngineResources' policy (resources.hpp).
struct CudaApi {
  using Stream = cudaStream_t;
  static Stream create_stream() {
    cudaStream_t s = nullptr;
    TAGC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ++g_live;
    return s;
  }
  static void destroy_stream(Stream s) noexcept {
    cudaStreamDestroy(s);
    --g_live;
  }
  static void* device_alloc(std::size_t bytes) {
    void* p = nullptr;
    TAGC_CUDA(cudaMalloc(&p, bytes));
    ++g_live;
    return p;
  }
  static void device_free(void* p) noexcept {
    cudaFree(p);
    --g_live;
  }
  static void* host_alloc(std::size_t bytes) {
    void* p = nullptr;
    TAGC_CUDA(cudaMallocHost(&p, bytes));
    ++g_live;
    return p;
  }
  static void host_free(void* p) noexcept {
    cudaFreeHost(p);
    --g_live;
  }
  [[noreturn]] static void fail(const std::string& what) { throw CudaError("CUDA error: " + what); }
};

// A CUDA event pair, destroyed whatever happens between.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    TAGC_CUDA(cudaEventCreate(&start));
    try {
      TAGC_CUDA(cudaEventCreate(&stop));
    } catch (...) {
      cudaEventDestroy(start);
      throw;
    }
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    cudaEventDestroy(stop);
    cudaEventDestroy(start);
  }
};

class CudaEngine final : public Engine {
 public:
  explicit CudaEngine(const EngineOptions& o)
      : prop_(device_properties(o.device)), res_(sizeof(Scratch), sizeof(unsigned long long), o.fail_acquisition) {
    ctx_.stream = o.stream ? static_cast<cudaStream_t>(o.stream) : res_.stream();
    ctx_.sms = prop_.multiProcessorCount;
    ctx_.max_blocks = o.max_blocks;
    ctx_.histogram = o.topk_histogram;
    ctx_.scratch = static_cast<Scratch*>(res_.scratch());
    ctx_.pinned = static_cast<unsigned long long*>(res_.pinned());
    TAGC_CUDA(cudaMemset(ctx_.scratch, 0, sizeof(Scratch)));
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, o.device) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, o.device) == cudaSuccess)
      peak_bw_ = 2.0 * clock_khz * 1e3 * bus_bits / 8.0;  // double data rate
    cudaGetLastError();
  }
  ~CudaEngine() override {
    // Errors here cannot be reported (destructor); the device is being let
    // go. Work still queued finishes before res_ frees what it uses.
    cudaStreamSynchronize(ctx_.stream);
  }

  Backend backend() const override { return Backend::Cuda; }
  std::string device_name() const override {
    return std::string(prop_.name) + " (sm_" + std::to_string(prop_.major) + std::to_string(prop_.minor) + ", " +
           std::to_string(prop_.multiProcessorCount) + " SMs, " +
           std::to_string((prop_.totalGlobalMem + (1ull << 29)) >> 30) + " GiB)";
  }
  double peak_memory_bandwidth() const override { return peak_bw_; }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw CudaError("CUDA error: cudaMalloc(" + std::to_string(bytes) + " bytes) failed: " + cudaGetErrorString(err));
    }
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    TAGC_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_.stream));
    TAGC_CUDA(cudaStreamSynchronize(ctx_.stream));
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    TAGC_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream));
    TAGC_CUDA(cudaStreamSynchronize(ctx_.stream));
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    TAGC_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx_.stream));
  }
  void zero(void* dst, std::size_t bytes) override { TAGC_CUDA(cudaMemsetAsync(dst, 0, bytes, ctx_.stream)); }
  void synchronize() override { TAGC_CUDA(cudaStreamSynchronize(ctx_.stream)); }
  double time_seconds(const std::function<void()>& work) override {
    EventPair ev;
    float ms = 0;
    TAGC_CUDA(cudaEventRecord(ev.start, ctx_.stream));
    work();
    TAGC_CUDA(cudaEventRecord(ev.stop, ctx_.stream));
    TAGC_CUDA(cudaEventSynchronize(ev.stop));
    TAGC_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    return ms * 1e-3;
  }

  SparsifyResult sparsify(const float* grad, float* residual, float* out, std::size_t n, SparsifyMethod method,
                          double sparsity, float* threshold) override {
    return cuda::sparsify(ctx_, grad, residual, out, n, method, sparsity, threshold);
  }
  void create_index(const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index) override {
    cuda::create_index(ctx_, values, n, enc, index);
  }
  void aggregate_index(std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc) override {
    cuda::aggregate_index(ctx_, acc, other, n, enc);
  }
  void read_index(float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc) override {
    cuda::read_index(ctx_, values, index, n, enc);
  }
  void compress(const float* values, const SketchShape& shape, float* sketch, std::uint32_t* mapping) override {
    cuda::compress(ctx_, values, 1, shape, sketch, mapping);
  }
  void compress_batched(const float* values, std::size_t shards, const SketchShape& shape, float* sketches,
                        std::uint32_t* mappings) override {
    cuda::compress(ctx_, values, shards, shape, sketches, mappings);
  }
  void build_mapping(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape,
                     std::uint32_t* mapping) override {
    cuda::build_mapping(ctx_, index, enc, shape, mapping);
  }
  void decode_begin(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                    std::uint8_t* state) override {
    cuda::decode_begin(ctx_, index, enc, shape, out, state);
  }
  std::size_t peel_round(float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                         std::uint8_t* state) override {
    return cuda::peel_round(ctx_, sketch, mapping, shape, out, state);
  }
  void estimate(const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state) override {
    cuda::estimate(ctx_, sketch, shape, out, state);
  }
  std::size_t count_state(const std::uint8_t* state, std::size_t n, std::uint8_t value) override {
    return cuda::count_state(ctx_, state, n, value);
  }
  void accumulate(float* acc, const float* x, std::size_t n) override { cuda::accumulate(ctx_, acc, x, n); }

 private:
  static cudaDeviceProp device_properties(int device) {
    cudaDeviceProp p{};
    TAGC_CUDA(cudaSetDevice(device));
    TAGC_CUDA(cudaGetDeviceProperties(&p, device));
    return p;
  }

  cudaDeviceProp prop_;
  EngineResources<CudaApi> res_;  // owns what ctx_ points to
  Ctx ctx_{};
  double peak_bw_ = 0;
};

}  // namespace

long live_resources() { return g_live.load(); }

std::unique_ptr<Engine> make_engine(const EngineOptions& options) {
  std::string why = device_problem();
  if (!why.empty()) throw BackendUnavailable("CUDA back end unavailable: " + why);
  return std::make_unique<CudaEngine>(options);
}

}  // namespace tagcsim::kernels::cuda
