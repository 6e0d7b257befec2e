// TAGC's compression pipeline: one C++ API, two back ends (CPU reference and
// CUDA). See kernels/README.md and docs/tagc-algorithm.md.
//
// Every stage is a method of Engine and works on memory that the engine owns
// (host memory for the CPU back end, device memory for CUDA), so one driver
// runs unchanged on either. Stages enqueue work and return; the only host
// round trips are the bisection probes of SparsifyBisect (that is the
// reference algorithm's cost) and the "peeled anything" count of a peeling
// round.
#pragma once

#include "kernels/types.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tagcsim {
class Input;
}

namespace tagcsim::kernels {

// ---------------------------------------------------------------- encodings
inline constexpr IndexEncoding kAllEncodings[] = {IndexEncoding::Bit1Sum, IndexEncoding::Bit1Or,
                                                  IndexEncoding::Bit4Sum, IndexEncoding::Bit8Max};
const char* to_string(IndexEncoding);                      // "1bit-sum", "1bit-or", "4bit-sum", "8bit-max"
IndexEncoding parse_index_encoding(const tagcsim::Input&);  // InputError otherwise
IndexEncoding parse_index_encoding(std::string_view text, std::string_view what);
double index_bytes_per_element(IndexEncoding);              // 1/8, 1/8, 1/2, 1: the wire size
std::size_t index_bytes(std::size_t elements, IndexEncoding);  // bytes of one index buffer
bool is_lossy(IndexEncoding);                               // only Bit1Sum
// InputError unless `ranks` >= 1 and the encoding can aggregate that many
// ranks without overflow (4-bit SUM: at most 15).
void check_index_ranks(IndexEncoding, int ranks);

// ------------------------------------------------------------------- stages
inline constexpr Stage kAllStages[] = {Stage::SparsifyBisect, Stage::SparsifyTopk, Stage::IndexCreate,
                                       Stage::IndexRead,      Stage::Compress,     Stage::CompressBatched,
                                       Stage::DecodeRound,    Stage::Estimate};
const char* to_string(Stage);  // "sparsify_bisect", ..., "estimate"
Stage parse_stage(std::string_view text, std::string_view what);
bool stage_uses_encoding(Stage);  // IndexCreate, IndexRead

// The reference's fixed table: 25 thresholds, geometric from 1e-20 to 0.5.
std::span<const float> bisect_thresholds();
inline constexpr int kBisectProbes = 5;  // ceil(log2(25 + 1)): host syncs per bisection
// Elements kept by the exact top-k at `sparsity` (fraction zeroed): n - round(sparsity * n).
std::size_t topk_keep_count(std::size_t n, double sparsity);

// ------------------------------------------------------------------- sketch
// Geometry of one shard's count sketch. Elements past the last whole block
// (the tail) are not sketched: the pipeline sends them plain.
struct SketchShape {
  std::size_t elements = 0;  // shard length
  std::size_t blocks = 0;    // elements / kBlock
  std::size_t tail = 0;      // elements % kBlock
  std::size_t rows = 0;      // R = ceil(blocks / ratio) (0 when blocks == 0)
  double ratio = 0;          // requested uncompressed / sketch counters
  std::size_t blocked() const { return blocks * kBlock; }
  std::size_t counters() const { return rows * kBlock; }
  double effective_ratio() const { return rows ? double(blocks) / double(rows) : 0.0; }
};
// InputError when ratio <= 1 or not finite.
SketchShape sketch_shape(std::size_t elements, double ratio);

// ----------------------------------------------------------------- back ends
enum class Backend { Cpu, Cuda };
const char* to_string(Backend);  // "cpu", "cuda"
Backend parse_backend(std::string_view text, std::string_view what);

// The requested back end cannot run here (built without nvcc, or no GPU).
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A CUDA call failed; the message names the call and CUDA's error string.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool cuda_compiled();       // built with nvcc
std::string cuda_problem();  // "" when a CUDA device is usable, else why not

struct SparsifyResult {
  int host_syncs = 0;  // bisection probes (0 for top-k)
};
struct DecodeResult {
  int rounds = 0;             // peeling rounds run, the last one peeling nothing
  std::size_t recovered = 0;  // elements peeled (exact)
  std::size_t estimated = 0;  // flagged elements left to the median estimate
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual Backend backend() const = 0;
  virtual std::string device_name() const = 0;
  // Nominal peak memory bandwidth in bytes/s; 0 when unknown (CPU).
  virtual double peak_memory_bandwidth() const = 0;

  // --- memory in the engine's address space ---
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void copy_in(void* dst, const void* host_src, std::size_t bytes) = 0;   // waits
  virtual void copy_out(void* host_dst, const void* src, std::size_t bytes) = 0;  // waits
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(void* dst, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Seconds taken by the work that `work` enqueues (CUDA events on the GPU).
  virtual double time_seconds(const std::function<void()>& work) = 0;

  // --- stages. Pointers are engine memory; no aliasing between arguments. ---

  // acc = grad + residual; keep |acc| >= threshold; out = kept values (others
  // 0); residual = acc - out. The threshold zeroes about `sparsity` of the
  // elements: Bisect picks the smallest table entry that zeroes at least that
  // fraction (the largest entry if none does); TopK keeps exactly the
  // topk_keep_count() largest magnitudes, plus any ties with the smallest.
  // `threshold` (nullable, one float) receives the threshold used. NaN ranks
  // above +-inf above every finite magnitude, and every NaN result is the
  // canonical NaN (rules.hpp add_rn). n == 0 does nothing on either back end
  // (no probes) except write the keep-nothing threshold, +inf.
  virtual SparsifyResult sparsify(const float* grad, float* residual, float* out, std::size_t n,
                                  SparsifyMethod method, double sparsity, float* threshold) = 0;
  // Flag = value != 0, written as index_bytes(n, enc) bytes (1-bit: element i
  // is bit i%8 of byte i/8; 4-bit: nibble i%2 of byte i/2, low nibble first).
  virtual void create_index(const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index) = 0;
  // acc = acc (op) other, bytewise, as the collective would: SUM (wrapping)
  // for 1bit-sum and 4bit-sum, OR for 1bit-or, MAX for 8bit-max.
  virtual void aggregate_index(std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc) = 0;
  // values[i] = value with its lowest mantissa bit set to the aggregated flag.
  virtual void read_index(float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc) = 0;
  // Overwrites `sketch` (shape.counters() floats) with the count sketch of the
  // blocked part of `values`; if `mapping` is given, also overwrites it with
  // the per-counter count of flagged elements (flag = lowest mantissa bit).
  // Counter updates follow fp32 atomics on both back ends (rules.hpp
  // sketch_add): zero and subnormal values add nothing, subnormal sums flush.
  virtual void compress(const float* values, const SketchShape& shape, float* sketch, std::uint32_t* mapping) = 0;
  // Same for `shards` consecutive shards of shape.elements each, in one pass:
  // sketch s lands at sketches + s * shape.counters(). Shard s's blocks are
  // numbered from 0, exactly as the per-shard compress numbers them.
  virtual void compress_batched(const float* values, std::size_t shards, const SketchShape& shape,
                                float* sketches, std::uint32_t* mappings) = 0;
  // The owner's mapping, computed from the global index alone.
  virtual void build_mapping(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape,
                             std::uint32_t* mapping) = 0;
  // Decoder set-up: out[blocked part] = 0, state = kUnknown where flagged
  // (else kNotFlagged). The tail of `out` is left alone.
  virtual void decode_begin(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                            std::uint8_t* state) = 0;
  // One peeling round. An unknown element with a counter whose mapping is 1
  // (first such hash k) takes sign_k * counter; then every element peeled in
  // this round is subtracted from its three counters and mappings. Returns
  // the number peeled (the one host read per round).
  virtual std::size_t peel_round(float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                                 std::uint8_t* state) = 0;
  // Unknown elements get the median of their three signed counters.
  virtual void estimate(const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state) = 0;
  // Elements of `state` (n bytes) equal to `value` (waits).
  virtual std::size_t count_state(const std::uint8_t* state, std::size_t n, std::uint8_t value) = 0;
  // acc += x (a simulated SUM collective).
  virtual void accumulate(float* acc, const float* x, std::size_t n) = 0;

  // --- drivers built from the stages ---
  // decode_begin, peel_round until one peels nothing, estimate. `sketch` and
  // `mapping` are consumed. `state` (shape.blocked() bytes) may be null.
  DecodeResult decode(float* sketch, std::uint32_t* mapping, const std::uint8_t* index, IndexEncoding enc,
                      const SketchShape& shape, float* out, std::uint8_t* state = nullptr, int max_rounds = 10000);
  // out = the aggregation of the ranks' indexes (checks the rank count).
  void reduce_indexes(std::span<const std::uint8_t* const> rank_indexes, std::size_t n, IndexEncoding enc,
                      std::uint8_t* out);
};

// BackendUnavailable when the back end cannot run here.
std::unique_ptr<Engine> make_engine(Backend);

const char* to_string(TopkHistogram);  // "warp", "shared"
TopkHistogram parse_topk_histogram(std::string_view text, std::string_view what);

// Knobs of the CUDA back end, for the tests and the bench. The CPU back end
// has none: it ignores them.
struct EngineOptions {
  // Test hook: at most this many blocks per kernel (0: enough to fill the
  // device). 1 or 2 make every grid-stride loop, per-block re-hash and ballot
  // loop go round many times on small data.
  unsigned max_blocks = 0;
  TopkHistogram topk_histogram = TopkHistogram::Warp;
  // Test hook: the k-th device resource the engine's constructor acquires
  // (1 stream, 2 scratch, 3 pinned word) fails with CudaError (0: none).
  int fail_acquisition = 0;
  // The GPU the engine runs on, and a stream of that GPU to enqueue its work on instead of its
  // own (nullptr: its own). `tagcsim calibrate check` runs TAGC's kernels on each GPU's compute
  // stream, ordered with the step's other kernels by that stream.
  int device = 0;
  void* stream = nullptr;
};
std::unique_ptr<Engine> make_engine(Backend, const EngineOptions&);

// An engine allocation of `n` elements of T, released on destruction.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Engine& e, std::size_t n) : engine_(&e), n_(n) {
    if (n) data_ = static_cast<T*>(e.allocate(n * sizeof(T)));
  }
  Buffer(Engine& e, std::span<const T> host) : Buffer(e, host.size()) { upload(host); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ~Buffer() {
    if (data_) engine_->release(data_);
  }
  T* get() const { return data_; }
  std::size_t size() const { return n_; }
  void upload(std::span<const T> host) {
    if (host.size() != n_) throw std::invalid_argument("Buffer::upload: size mismatch");
    if (n_) engine_->copy_in(data_, host.data(), n_ * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    if (n_) engine_->copy_out(v.data(), data_, n_ * sizeof(T));
    return v;
  }
  void zero() {
    if (n_) engine_->zero(data_, n_ * sizeof(T));
  }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(engine_, o.engine_);
    std::swap(data_, o.data_);
    std::swap(n_, o.n_);
  }
  Engine* engine_ = nullptr;
  T* data_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace tagcsim::kernels
