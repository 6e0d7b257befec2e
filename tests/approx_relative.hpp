#pragma once
// doctest's Approx passes when |a - b| < epsilon x (scale + max(|a|, |b|)), with scale 1: for
// values far below 1 (seconds of microseconds, bytes in GB units) that is an absolute tolerance of
// epsilon, and a check of a 2 us time passes for anything within 12 us. Every test here compares
// relatively: scale ~0, so the tolerance is epsilon x the larger value (an exact 0 still equals 0).
#include <doctest/doctest.h>
#define Approx(...) Approx(__VA_ARGS__).scale(1e-300)
