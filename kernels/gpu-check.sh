#!/usr/bin/env bash
# The one prepared GPU check of the TAGC kernels (issue 3): CUDA-vs-CPU
# equality tests, then `kernels bench --backend cuda` writing the JSON profile.
#
# GPU machines lent to sessions have nvcc and CMake but not the simulator's
# Debian libraries (SimGrid, yaml-cpp, fmt, CLI11, doctest), so the work is
# split in two:
#
#   1. here, on a machine with nvcc (no GPU needed):
#        bash kernels/gpu-check.sh prepare [BUILD]          # default BUILD=build-gpu
#      builds test_kernels and tagcsim-kernels (the `kernels` subcommand alone,
#      no SimGrid) for sm_80 and sm_90, and copies the shared libraries they
#      need that a CUDA image lacks into BUILD/lib (a few MiB in all).
#
#   2. on the GPU machine (device tool: carry ["build-gpu"]):
#        bash kernels/gpu-check.sh run [BUILD] [OUTDIR]    # default OUTDIR=$OUT
#      Where the carried binaries cannot start and the simulator's
#      dependencies are present, it rebuilds there instead.
#
# Results in OUTDIR: nvidia-smi.txt, cuda-vs-cpu.log (must show no SKIPPED),
# test_kernels.log, bench-cuda.txt (table) and kernels-cuda-<gpu>.json (copy
# it to calibrate/profiles/). Exit status is nonzero if any check fails.
# Budget: the tests take seconds; the bench (64 KiB .. 1 GiB, 25 runs per
# point after 3 warm-ups) about a minute, mostly generating 1 GiB of input on
# the host.
set -uo pipefail

mode=${1:-}
build=${2:-build-gpu}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

prepare() {
  command -v nvcc >/dev/null || { echo "gpu-check: nvcc not on PATH: the CUDA back end cannot be built" >&2; exit 1; }
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTAGCSIM_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=80;90" || exit 1
  grep -q "TAGCSIM_HAVE_CUDA=1" "$build/kernels/CMakeFiles/tagcsim_kernels.dir/flags.make" ||
    { echo "gpu-check: CMake did not enable the CUDA back end" >&2; exit 1; }
  cmake --build "$build" --target test_kernels tagcsim-kernels -j"$(nproc)" || exit 1
  mkdir -p "$build/lib"
  # Everything except glibc, libstdc++ and the CUDA runtime, which the GPU image has.
  for bin in "$build/test_kernels" "$build/tagcsim-kernels"; do
    ldd "$bin" | awk '/=> \// {print $3}' |
      grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*|libcudart)\.so' |
      xargs -r -I{} cp -L {} "$build/lib/"
  done
  echo "gpu-check: prepared $build ($(du -sh "$build/lib" | cut -f1) of libraries in $build/lib)."
  echo "gpu-check: on the GPU machine: bash kernels/gpu-check.sh run $build \$OUT   (carry [\"$build\"])"
}

runs_here() { LD_LIBRARY_PATH="$here/$build/lib:${LD_LIBRARY_PATH:-}" "$@" >/dev/null 2>&1; }

run() {
  local out=${3:-${OUT:-gpu-check-out}}
  mkdir -p "$out"
  nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "gpu-check: nvidia-smi failed" >&2
  if ! runs_here "$build/tagcsim-kernels" --help || ! runs_here "$build/test_kernels" --count; then
    echo "gpu-check: the carried binaries in $build do not start here; trying to build on this machine" >&2
    build=build-gpu-local
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=90" >"$out/configure.log" 2>&1 &&
      cmake --build "$build" --target test_kernels tagcsim-kernels -j"$(nproc)" >"$out/build.log" 2>&1 ||
      { echo "gpu-check: cannot build here either (see $out/configure.log, $out/build.log)" >&2; exit 1; }
  fi
  export LD_LIBRARY_PATH="$here/$build/lib:${LD_LIBRARY_PATH:-}"
  local status=0
  # The CUDA-vs-CPU cases report SKIPPED when they see no GPU: here that is a failure.
  "$build/test_kernels" -s -tc='CUDA*' >"$out/cuda-vs-cpu.log" 2>&1 || status=1
  if grep -q SKIPPED "$out/cuda-vs-cpu.log"; then
    echo "gpu-check: the CUDA-vs-CPU tests were skipped: no usable GPU" >&2
    grep -m1 SKIPPED "$out/cuda-vs-cpu.log" >&2
    status=1
  fi
  tail -4 "$out/cuda-vs-cpu.log"
  "$build/test_kernels" >"$out/test_kernels.log" 2>&1 || status=1
  tail -3 "$out/test_kernels.log"
  local gpu
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' |
        sed 's/^nvidia-//; s/-$//')
  local json="$out/kernels-cuda-${gpu:-gpu}.json"
  "$build/tagcsim-kernels" kernels bench --backend cuda --json "$json" >"$out/bench-cuda.txt" 2>"$out/bench-cuda.log" ||
    { echo "gpu-check: bench failed" >&2; tail -5 "$out/bench-cuda.log" >&2; status=1; }
  grep -E "^(device|reference)|256 MiB" "$out/bench-cuda.txt"
  echo "gpu-check: results in $out (exit $status)"
  exit $status
}

case "$mode" in
  prepare) prepare ;;
  run) run "$@" ;;
  *) sed -n '2,27p' "$0"; exit 2 ;;
esac
