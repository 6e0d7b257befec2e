#!/usr/bin/env bash
# The prepared GPU run of the TAGC kernels: the CUDA-vs-CPU suite, diagnosed
# when it fails, the sanitizers, and the CUDA bench. GPU machines are lent
# for minutes and may lack everything but the NVIDIA driver, so the work is
# split in two.
#
#   Here (nvcc, no GPU needed):
#     bash kernels/gpu-check.sh prepare [BUILD]   # default BUILD=build
#       builds the kernel tests and tagcsim-kernels (sm_80 and sm_90, the CUDA
#       runtime linked statically), bundles them with the shared libraries they
#       need into BUILD/gpu-bundle (binaries look in $ORIGIN/lib only), then
#       checks the bundle as `bundle` does.
#     bash kernels/gpu-check.sh bundle [BUILD]    # what ctest runs
#       bundles already-built binaries and checks the bundle with an empty
#       environment (env -i): the loader finds every library inside it, and
#       each binary runs until it looks for a GPU, then stops only with the
#       "no GPU" error (the CUDA cases print SKIPPED).
#
#   On the GPU machine (device tool: carry ["build/gpu-bundle"]):
#     bash kernels/gpu-check.sh run OUTDIR [BUDGET_SECONDS]   # default 480
#       1. records the machine (nvidia-smi, driver, glibc), checks the bundle
#          starts and sees the GPU;
#       2. the CUDA-vs-CPU suite (test_kernels_cuda); a SKIPPED is a failure;
#       3. on any failure there, every CUDA case again in its own process with
#          CUDA_LAUNCH_BLOCKING=1, so a fault names its kernel instead of
#          poisoning the cases after it (OUTDIR/isolated/);
#       4. compute-sanitizer memcheck and racecheck on the equality cases,
#          where compute-sanitizer exists;
#       5. the CPU suites (test_kernels, test_kernels_edge);
#       6. the bench: kernels-cuda-<gpu>.json (copy it to calibrate/profiles/),
#          and sparsify_topk with the old shared-memory histogram against the
#          warp-aggregated one (topk-histogram.txt).
#     Steps past the budget are skipped and say so. OUTDIR/summary.txt has one
#     line per step; the exit status is 0 only when every step that ran passed
#     (3: the bundle cannot start or sees no GPU). TAGCSIM_GPU_BUNDLE names
#     another bundle folder.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bins=(test_kernels test_kernels_edge test_kernels_cuda tagcsim-kernels)
# Provided by the target's glibc; everything else is bundled into lib/.
base_libs='^(linux-vdso|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libresolv|libutil)\.so'
# The C++ runtime is the target's own where it is recent enough (GCC 11+):
# this machine's libstdc++ would need a newer glibc (2.36) than the binaries
# do (2.34). A copy waits in lib/cxx for targets without one; `run` uses it
# only if the binaries do not start otherwise.
cxx_libs='^(libstdc\+\+|libgcc_s)\.so'

die() { echo "gpu-check: $*" >&2; exit 1; }

# ------------------------------------------------------------------ bundle

make_bundle() {
  local build=$1 bundle=$1/gpu-bundle
  for b in "${bins[@]}"; do [[ -x $build/$b ]] || die "$build/$b is missing: build it first (bash kernels/gpu-check.sh prepare)"; done
  rm -rf "$bundle"
  mkdir -p "$bundle/lib/cxx" || die "cannot write $bundle"
  for b in "${bins[@]}"; do
    cp "$build/$b" "$bundle/" || die "cannot copy $b"
    local runpath
    runpath=$(readelf -d "$bundle/$b" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    [[ $runpath == '$ORIGIN/lib' ]] ||
      die "$b looks for libraries in '$runpath', not only in \$ORIGIN/lib (tagcsim_gpu_bundle_rpath in kernels/CMakeLists.txt)"
    # Every library the loader resolves outside the base set travels along.
    while read -r name path; do
      if [[ $name =~ $cxx_libs ]]; then
        cp -L "$path" "$bundle/lib/cxx/$name" || die "cannot copy $path"
      elif ! [[ $name =~ $base_libs ]]; then
        cp -L "$path" "$bundle/lib/$name" || die "cannot copy $path"
      fi
    done < <(/lib64/ld-linux-x86-64.so.2 --list "$build/$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  done
  {
    echo "tagcsim GPU bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?')"
    echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
    echo "needs glibc >= $(newest GLIBC_ "$bundle"/test_* "$bundle"/tagcsim-kernels "$bundle"/lib/*.so*)" \
         "and libstdc++ >= $(newest GLIBCXX_ "$bundle"/test_* "$bundle"/tagcsim-kernels "$bundle"/lib/*.so*)" \
         "(or glibc >= $(newest GLIBC_ "$bundle"/lib/cxx/*) with lib/cxx)"
    echo "needs an NVIDIA driver for the CUDA runtime above (CUDA 13: driver 580 or newer)"
    (cd "$bundle" && find . -type f ! -name MANIFEST.txt -printf '%s %P\n' | sort -k2)
  } >"$bundle/MANIFEST.txt"
  echo "gpu-check: bundled ${bins[*]} and $(find "$bundle/lib" -type f | wc -l) libraries into $bundle ($(du -sh "$bundle" | cut -f1))"
}

# The newest symbol version of family $1 (GLIBC_, GLIBCXX_) the files need.
newest() {
  local family=$1
  shift
  objdump -T "$@" 2>/dev/null | grep -o "(${family}[0-9.]*)" | tr -d '()' | sort -uV | tail -1
}

check_bundle() {
  local bundle bad=0 out
  bundle=$(cd "$1" && pwd) || die "no bundle in $1"
  # 1. The loader, with no environment, resolves every non-base library inside the bundle.
  for b in "${bins[@]}"; do
    out=$(env -i /lib64/ld-linux-x86-64.so.2 --list "$bundle/$b" 2>&1) || { echo "$out"; die "$b does not load with env -i"; }
    local outside
    outside=$(awk '$2 == "=>" {print $1, $3}' <<<"$out" | grep -Ev "$base_libs|$cxx_libs" | grep -v " $bundle/lib/" || true)
    [[ -z $outside ]] || { echo "gpu-check: $b loads from outside the bundle:" >&2; echo "$outside" >&2; bad=1; }
    # The fallback C++ runtime is complete.
    out=$(env -i LD_LIBRARY_PATH="$bundle/lib/cxx" /lib64/ld-linux-x86-64.so.2 --list "$bundle/$b" 2>&1)
    outside=$(awk '$2 == "=>" {print $1, $3}' <<<"$out" | grep -E "$cxx_libs" | grep -v " $bundle/lib/cxx/" || true)
    [[ -z $outside ]] || { echo "gpu-check: $b: lib/cxx lacks" >&2; echo "$outside" >&2; bad=1; }
  done
  # 2. Each binary runs with env -i until it needs a GPU, then stops with the clear error.
  out=$(env -i "$bundle/tagcsim-kernels" kernels bench --backend cuda --sizes 64KiB 2>&1)
  local rc=$?
  if [[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 && $out == *"CUDA back end unavailable: no "* ]]; then
    echo "gpu-check: env -i tagcsim-kernels (exit 2): $out"
  else
    echo "gpu-check: env -i tagcsim-kernels kernels bench --backend cuda: exit $rc, expected exit 2 and one 'no GPU' line:" >&2
    echo "$out" >&2
    bad=1
  fi
  local cases skipped
  out=$(env -i "$bundle/test_kernels_cuda" 2>&1)
  rc=$?
  cases=$(env -i "$bundle/test_kernels_cuda" --list-test-cases | grep -c '^CUDA')
  skipped=$(grep -c 'MESSAGE: SKIPPED: CUDA-vs-CPU check needs a GPU: no ' <<<"$out")
  if [[ $rc -eq 0 && $cases -gt 0 && $skipped -eq $cases ]] && ! grep -q 'ERROR' <<<"$out"; then
    echo "gpu-check: env -i test_kernels_cuda (exit 0): all $cases CUDA cases SKIPPED: $(grep -m1 -o 'needs a GPU: .*' <<<"$out")"
  else
    echo "gpu-check: env -i test_kernels_cuda: exit $rc, $skipped of $cases cases SKIPPED for want of a GPU:" >&2
    tail -20 <<<"$out" >&2
    bad=1
  fi
  for b in test_kernels test_kernels_edge; do
    out=$(env -i "$bundle/$b" 2>&1)
    rc=$?
    if [[ $rc -eq 0 ]]; then
      echo "gpu-check: env -i $b (exit 0): $(grep -o 'test cases: .*' <<<"$out" | tr -s ' ')"
    else
      echo "gpu-check: env -i $b: exit $rc" >&2
      tail -20 <<<"$out" >&2
      bad=1
    fi
  done
  [[ $bad -eq 0 ]] || die "the bundle in $bundle is not ready for a bare GPU machine"
  echo "gpu-check: bundle ready: $bundle ($(sed -n 's/^needs glibc/needs glibc/p' "$bundle/MANIFEST.txt"))"
}

prepare() {
  local build=${1:-build}
  command -v nvcc >/dev/null || die "nvcc not on PATH: the CUDA back end cannot be built"
  cd "$here" || exit 1
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTAGCSIM_CUDA=ON >/dev/null || die "cmake failed"
  grep -q "TAGCSIM_HAVE_CUDA=1" "$build/kernels/CMakeFiles/tagcsim_kernels.dir/flags.make" ||
    die "CMake did not enable the CUDA back end"
  cmake --build "$build" --target "${bins[@]}" -j"$(nproc)" >/dev/null || die "build failed"
  make_bundle "$build"
  check_bundle "$build/gpu-bundle"
  echo "gpu-check: on the GPU machine: bash kernels/gpu-check.sh run \$OUT 480   (carry [\"$build/gpu-bundle\"])"
}

# --------------------------------------------------------------------- run

run() {
  local out=${1:-} budget=${2:-480}
  [[ -n $out ]] || die "usage: bash kernels/gpu-check.sh run OUTDIR [BUDGET_SECONDS]"
  [[ $budget =~ ^[0-9]+$ && $budget -ge 60 ]] || die "BUDGET_SECONDS: expected a whole number >= 60, got '$budget'"
  local bundle=${TAGCSIM_GPU_BUNDLE:-$here/build/gpu-bundle}
  mkdir -p "$out" || die "cannot write $out"
  out=$(cd "$out" && pwd)
  local deadline=$((SECONDS + budget)) status=0
  : >"$out/summary.txt"
  step() { echo "$1" | tee -a "$out/summary.txt"; }  # one line per step
  left() { echo $((deadline - SECONDS)); }
  # Runs "$@" under a timeout of at most $1 seconds (and what is left), output to file $2.
  timed() {
    local limit=$1 log=$2
    shift 2
    local t
    t=$(left)
    ((limit < t)) || limit=$t
    ((limit > 5)) || return 124
    timeout -k 5 "$limit" "$@" >"$log" 2>&1
  }

  # 1. The machine, and whether the bundle starts and sees the GPU.
  {
    nvidia-smi 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv 2>&1
    uname -a
    ldd --version 2>&1 | head -1
    cat "$bundle/MANIFEST.txt" 2>&1
  } >"$out/machine.txt"
  local probe=("$bundle/test_kernels" -s -tc='the CUDA back end reports a clear error*')
  if ! timed 60 "$out/start.log" "${probe[@]}"; then
    # This machine's C++ runtime is missing or too old: the bundled one, then.
    mv "$out/start.log" "$out/start-system-libstdc++.log"
    export LD_LIBRARY_PATH="$bundle/lib/cxx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if ! timed 60 "$out/start.log" "${probe[@]}"; then
      step "start: FAIL: the bundle's binaries do not start here (start*.log; the loader's view follows)"
      /lib64/ld-linux-x86-64.so.2 --list "$bundle/test_kernels" >>"$out/start.log" 2>&1
      tail -5 "$out/start-system-libstdc++.log" "$out/start.log"
      exit 3
    fi
    step "start: with the bundled C++ runtime (lib/cxx): $(head -1 "$out/start-system-libstdc++.log")"
  fi
  if grep -q 'CUDA back end unavailable here' "$out/start.log"; then
    step "start: FAIL: $(grep -o 'CUDA back end unavailable here: .*' "$out/start.log" | head -1)"
    exit 3
  fi
  step "start: ok: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

  # 2. The CUDA-vs-CPU suite in one process.
  local rc=0
  timed 240 "$out/cuda-vs-cpu.log" "$bundle/test_kernels_cuda" -s --duration=true || rc=$?
  local skipped
  skipped=$(grep -c 'SKIPPED' "$out/cuda-vs-cpu.log")
  if [[ $rc -eq 0 && $skipped -eq 0 ]]; then
    step "cuda-vs-cpu: ok: $(grep -o 'test cases: .*' "$out/cuda-vs-cpu.log" | tr -s ' ')"
  else
    status=1
    step "cuda-vs-cpu: FAIL: exit $rc, $skipped SKIPPED: $(grep -o 'test cases: .*' "$out/cuda-vs-cpu.log" | tr -s ' ')"
    # 3. Each case alone, launches synchronous: the first error names its kernel.
    mkdir -p "$out/isolated"
    local i=0 name pat
    while IFS= read -r name; do
      i=$((i + 1))
      pat=${name//,/?}  # doctest splits filters at commas; ? matches any one character
      local log
      log="$out/isolated/$(printf %02d $i).log"
      rc=0
      timed 120 "$log" env CUDA_LAUNCH_BLOCKING=1 "$bundle/test_kernels_cuda" -s -tc="$pat" || rc=$?
      if [[ $rc -eq 0 ]] && grep -Eq 'test cases: +1 \| +1 passed' "$log" && ! grep -q SKIPPED "$log"; then
        step "  isolated $(printf %02d $i): ok: $name"
      else
        step "  isolated $(printf %02d $i): FAIL (exit $rc$(grep -q SKIPPED "$log" && echo ', SKIPPED')): $name: $(grep -m1 -E 'ERROR|CUDA error' "$log")"
      fi
    done < <("$bundle/test_kernels_cuda" --list-test-cases | grep -E '^CUDA')
  fi

  # 4. The sanitizers on the equality cases (the multi-iteration one is left
  # to the plain run: it is the same code on 8x the data).
  local sanitizer reserve=150
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
  if [[ -z $sanitizer ]]; then
    step "sanitizers: skipped: compute-sanitizer not found"
  else
    local tool cap
    for tool in memcheck racecheck; do
      cap=$(($(left) - reserve))  # the CPU suites and the bench keep their share
      # racecheck on one H200 took 132 s (memcheck well under a minute): 120 s cut its summary off.
      local most=120
      [[ $tool == racecheck ]] && most=180
      ((cap <= most)) || cap=$most
      if ((cap < 45)); then
        step "$tool: skipped: $(left) s left of the budget, $reserve s kept for the bench"
        continue
      fi
      rc=0
      timed "$cap" "$out/$tool.log" "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
        "$bundle/test_kernels_cuda" -tc='CUDA*' -tce='*multi-iteration*' || rc=$?
      if [[ $rc -eq 0 ]]; then
        step "$tool: ok: $(grep -Eo '(ERROR SUMMARY|RACECHECK SUMMARY): .*' "$out/$tool.log" | tail -1)"
      elif [[ $rc -eq 124 || $rc -eq 137 ]] && ! grep -Eq '(ERROR SUMMARY|RACECHECK SUMMARY): [1-9]' "$out/$tool.log"; then
        step "$tool: INCOMPLETE: out of time, no error reported before ($tool.log)"
      else
        status=1
        step "$tool: FAIL (exit $rc): $(grep -Eo '(ERROR SUMMARY|RACECHECK SUMMARY): .*' "$out/$tool.log" | tail -1)"
      fi
    done
  fi

  # 5. The CPU suites (the reference the equality cases trust).
  rc=0
  { timed 60 "$out/test_kernels.log" "$bundle/test_kernels" && timed 60 "$out/test_kernels_edge.log" "$bundle/test_kernels_edge"; } || rc=$?
  if [[ $rc -eq 0 ]]; then step "cpu suites: ok"; else status=1; step "cpu suites: FAIL (exit $rc)"; fi

  # 6. The bench, then the old histogram against the new one for sparsify_topk.
  local gpu json
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' |
        sed 's/^nvidia-//; s/-$//')
  json="$out/kernels-cuda-${gpu:-gpu}.json"
  local sizes=64KiB,1MiB,16MiB,256MiB,1GiB
  (($(left) >= 140)) || sizes=64KiB,1MiB,16MiB,256MiB  # 1 GiB: half a minute of host-side input
  if (($(left) < 75)); then
    step "bench: skipped: $(left) s left of the budget"
  else
    rc=0
    timed $(($(left) - 35)) "$out/bench-cuda.txt" "$bundle/tagcsim-kernels" kernels bench --backend cuda --sizes "$sizes" --json "$json" || rc=$?
    if [[ $rc -eq 0 ]]; then step "bench: ok: $json ($sizes)"; else status=1; step "bench: FAIL (exit $rc)"; fi
  fi
  if (($(left) < 25)); then
    step "topk-histogram: skipped: $(left) s left of the budget"
  else
    rc=0
    timed 60 "$out/bench-cuda-shared-histogram.txt" "$bundle/tagcsim-kernels" kernels bench --backend cuda \
      --sizes 16MiB,256MiB --topk-histogram shared || rc=$?
    {
      echo "sparsify_topk, median seconds: warp-aggregated histogram (default) | one shared histogram per block"
      # Table rows only ("16 MiB sparsify_topk - 0.00123 s ..."), not the progress lines.
      join <(awk '$3 == "sparsify_topk" && $4 == "-" {print $1 $2, $5}' "$out/bench-cuda.txt" | sort) \
           <(awk '$3 == "sparsify_topk" && $4 == "-" {print $1 $2, $5}' "$out/bench-cuda-shared-histogram.txt" | sort)
    } >"$out/topk-histogram.txt" 2>&1
    if [[ $rc -eq 0 ]]; then step "topk-histogram: ok: topk-histogram.txt"; else status=1; step "topk-histogram: FAIL (exit $rc)"; fi
  fi
  step "gpu-check: results in $out, exit $status"
  exit $status
}

case "${1:-}" in
  prepare) prepare "${2:-build}" ;;
  bundle)
    make_bundle "${2:-build}"
    check_bundle "${2:-build}/gpu-bundle"
    ;;
  run) run "${2:-}" "${3:-}" ;;
  *) sed -n '2,36p' "$0"; exit 2 ;;
esac
