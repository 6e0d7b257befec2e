// torchao's float8 casts around a Linear's GEMMs, for the Builder of kernel_builder.hpp
// (docs/compute-model.md, "The kernels of a unit").
#include "models/kernel_builder.hpp"

#include <string>

namespace tagcsim::models::detail {

// torchao's Float8Linear with tensorwise dynamic scaling (torchao/float8/float8_linear.py,
// matmul_with_hp_or_float8_args): each float8 operand is a high-precision tensor cast with a
// scale from its absolute maximum, one reduction (reads e per element) and one cast (reads e,
// writes 1 per element and layout: torch._scaled_mm wants its second operand column-major, so
// wgrad needs x and g column-major, dgrad W transposed). Eager, every use casts again: forward x
// and W, backward g twice, W and x again. Compiled, as torchao's own roofline counts it
// (torchao/testing/training/roofline_utils.py, tensorwise): x and g are cast once into both
// layouts (x in forward, kept for wgrad), W cast forward and again transposed backward, its amax
// reused. With float8 all-gather W arrives in float8: its casts become one transposed copy.
// Under tensor parallelism (torchao's Float8ColwiseParallel and Float8RowwiseParallel) a Linear
// that reads the gathered sequence has its input cast on the GPU's sequence shard and gathered in
// float8, and one whose output is reduce-scattered to the shards has its output gradient cast
// there and gathered in float8; wgrad then wants the gathered tensor column-major, one transposed
// copy of it.
void Builder::float8_casts(std::vector<Kernel>& to, const std::string& name, double i, double o, bool backward,
                           bool cast_input, Parallel tp) {
  const bool compiled = impl_.compiled;
  // Eager, torchao runs each step op by op (torchao/float8/float8_utils.py and float8_tensor.py
  // @3eb18e7, Jan 2025): the amax is torch.max(torch.abs(x)), two kernels (2e and e an element),
  // and four scalar kernels turn it into the scale (to float64, clamp, divide, to float32); the
  // cast is x.to(float32) * scale, clamp, .to(float8), four kernels of (e + 4), 8, 8 and 5 bytes an
  // element where a compiled block's one reads e and writes 1 a layout.
  auto amax = [&](const std::string& what, double elems) {
    if (!compiled) mem(to, name + " fp8 amax " + what + " abs", 2 * e_ * elems);
    mem(to, name + " fp8 amax " + what, e_ * elems);
    if (!compiled) mem(to, name + " fp8 scale " + what, 8, 4);
  };
  auto cast = [&](const std::string& what, double elems, int layouts) {
    if (compiled) return mem(to, name + " fp8 cast " + what, (e_ + layouts) * elems);
    mem(to, name + " fp8 cast " + what + " to fp32", (e_ + 4) * elems);
    mem(to, name + " fp8 cast " + what + " scale", 8 * elems);
    mem(to, name + " fp8 cast " + what + " clamp", 8 * elems);
    mem(to, name + " fp8 cast " + what, 5 * elems);
  };
  auto transpose = [&](const std::string& what, double elems) { mem(to, name + " fp8 " + what + " transpose", 2 * elems); };
  const bool column = tp.column, row = tp.row;
  const double weight = o * i, x = T_ * i, g = T_ * o;
  if (!backward) {
    if (column) {
      if (cast_input) amax("input", Tsp_ * i), cast("input", Tsp_ * i, 1);
    } else if (cast_input) {
      amax("input", x), cast("input", x, compiled ? 2 : 1);
    }
    if (!impl_.float8_all_gather) amax("weight", weight), cast("weight", weight, 1);
    return;
  }
  // Eager, each hp_tensor_to_float8_dynamic call takes its own amax (float8_linear.py's backward:
  // g for the dgrad and again for the wgrad), and _scaled_mm's first operand must be row-major, its
  // second column-major (float8_ops.py, preprocess_addmm): the dgrad's W and the wgrad's g and x
  // are each copied transposed.
  if (row) {
    amax("grad_output", Tsp_ * o), cast("grad_output", Tsp_ * o, 1), transpose("grad_output", g);
  } else {
    amax("grad_output", g);
    if (compiled) {
      cast("grad_output", g, 2);
    } else {
      cast("grad_output", g, 1), amax("grad_output", g), cast("grad_output", g, 1), transpose("grad_output", g);
    }
  }
  if (impl_.float8_all_gather) {
    transpose("weight", weight);
  } else {
    if (!compiled) amax("weight", weight);
    cast("weight", weight, 1);
    if (!compiled) transpose("weight", weight);
  }
  if (column) {
    if (cast_input || !compiled) transpose("input", x);
  } else if (!compiled) {
    amax("input", x), cast("input", x, 1), transpose("input", x);
  }
}

}  // namespace tagcsim::models::detail
