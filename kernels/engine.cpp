// The CPU engine, the back-end dispatcher, and the drivers built on stages.
#include "common/input.hpp"
#include "kernels/cpu_reference.hpp"
#include "kernels/rules.hpp"
#include "kernels/tagc.hpp"
#if TAGCSIM_HAVE_CUDA
#include "kernels/cuda/cuda_engine.hpp"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>

namespace tagcsim::kernels {
namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) {
        auto s = line.substr(pos + 1);
        s.erase(0, s.find_first_not_of(" \t"));
        return s;
      }
    }
  }
  return "unknown CPU";
}

// Host memory, one thread: the reference everything else is checked against.
class CpuEngine final : public Engine {
 public:
  Backend backend() const override { return Backend::Cpu; }
  std::string device_name() const override {
    return fmt::format("{} ({} hardware threads; CPU back end is single-threaded)", cpu_model(),
                       std::thread::hardware_concurrency());
  }
  double peak_memory_bandwidth() const override { return 0; }

  void* allocate(std::size_t bytes) override {
    // 64-byte alignment: whole cache lines, and room for vector loads.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void copy_in(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_out(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void zero(void* dst, std::size_t bytes) override { std::memset(dst, 0, bytes); }
  void synchronize() override {}
  double time_seconds(const std::function<void()>& work) override {
    auto t0 = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  SparsifyResult sparsify(const float* grad, float* residual, float* out, std::size_t n, SparsifyMethod method,
                          double sparsity, float* threshold) override {
    return cpu::sparsify(grad, residual, out, n, method, sparsity, threshold);
  }
  void create_index(const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index) override {
    cpu::create_index(values, n, enc, index);
  }
  void aggregate_index(std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc) override {
    cpu::aggregate_index(acc, other, n, enc);
  }
  void read_index(float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc) override {
    cpu::read_index(values, index, n, enc);
  }
  void compress(const float* values, const SketchShape& shape, float* sketch, std::uint32_t* mapping) override {
    cpu::compress(values, shape, sketch, mapping);
  }
  void compress_batched(const float* values, std::size_t shards, const SketchShape& shape, float* sketches,
                        std::uint32_t* mappings) override {
    cpu::compress_batched(values, shards, shape, sketches, mappings);
  }
  void build_mapping(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape,
                     std::uint32_t* mapping) override {
    cpu::build_mapping(index, enc, shape, mapping);
  }
  void decode_begin(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                    std::uint8_t* state) override {
    cpu::decode_begin(index, enc, shape, out, state);
  }
  std::size_t peel_round(float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                         std::uint8_t* state) override {
    return cpu::peel_round(sketch, mapping, shape, out, state);
  }
  void estimate(const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state) override {
    cpu::estimate(sketch, shape, out, state);
  }
  std::size_t count_state(const std::uint8_t* state, std::size_t n, std::uint8_t value) override {
    return static_cast<std::size_t>(std::count(state, state + n, value));
  }
  void accumulate(float* acc, const float* x, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) acc[i] = add_rn(acc[i], x[i]);
  }
};

}  // namespace

bool cuda_compiled() {
#if TAGCSIM_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string cuda_problem() {
#if TAGCSIM_HAVE_CUDA
  return cuda::device_problem();
#else
  return "tagcsim was built without the CUDA back end (nvcc was not found, or TAGCSIM_CUDA=OFF)";
#endif
}

std::unique_ptr<Engine> make_engine(Backend b) { return make_engine(b, EngineOptions{}); }

std::unique_ptr<Engine> make_engine(Backend b, const EngineOptions& options) {
  if (b == Backend::Cpu) return std::make_unique<CpuEngine>();
#if TAGCSIM_HAVE_CUDA
  return cuda::make_engine(options);
#else
  (void)options;
  throw BackendUnavailable("CUDA back end unavailable: " + cuda_problem());
#endif
}

DecodeResult Engine::decode(float* sketch, std::uint32_t* mapping, const std::uint8_t* index, IndexEncoding enc,
                            const SketchShape& shape, float* out, std::uint8_t* state, int max_rounds) {
  DecodeResult r;
  if (shape.blocks == 0) return r;
  Buffer<std::uint8_t> own;
  if (!state) {
    own = Buffer<std::uint8_t>(*this, shape.blocked());
    state = own.get();
  }
  decode_begin(index, enc, shape, out, state);
  while (r.rounds < max_rounds) {
    std::size_t peeled = peel_round(sketch, mapping, shape, out, state);
    ++r.rounds;
    r.recovered += peeled;
    if (peeled == 0) break;
  }
  r.estimated = count_state(state, shape.blocked(), kUnknown);
  estimate(sketch, shape, out, state);
  synchronize();
  return r;
}

void Engine::reduce_indexes(std::span<const std::uint8_t* const> rank_indexes, std::size_t n, IndexEncoding enc,
                            std::uint8_t* out) {
  check_index_ranks(enc, static_cast<int>(rank_indexes.size()));
  copy(out, rank_indexes[0], index_bytes(n, enc));
  for (std::size_t r = 1; r < rank_indexes.size(); ++r) aggregate_index(out, rank_indexes[r], n, enc);
}

}  // namespace tagcsim::kernels
