#!/usr/bin/env bash
# The prepared GPU run of `tagcsim calibrate box` and `calibrate check`, and of the TAGC kernel
# checks. GPU machines are lent for minutes and may have little more than the driver, so the
# binaries are built and bundled here and the run diagnoses itself.
#
#   Here (nvcc and the simulator's dependencies):
#     bash calibrate/gpu-run.sh prepare [BUILD]        # default BUILD=build
#       builds tagcsim with the CUDA measurement code (the CUDA runtime static; NCCL, cuBLASLt,
#       cuDNN and NVML are opened at run time), bundles it with the shared libraries it needs
#       into BUILD/calibrate-bundle.tar.xz (lib/, found through $ORIGIN/lib), checks the bundle
#       starts with env -i and stops only for the missing GPU, and prepares the kernels' bundle
#       (kernels/gpu-check.sh prepare -> BUILD/gpu-bundle).
#
#   On the GPU machine, in the repository root (device tool: carry
#   ["build/calibrate-bundle.tar.xz", "build/gpu-bundle"]):
#     bash calibrate/gpu-run.sh OUTDIR [BUDGET_SECONDS]   # default 540, at least 120
#       1. records the machine; unpacks the bundle; finds NCCL, cuBLASLt and cuDNN (the CUDA
#          toolkit, or pip's nvidia-* wheels of the machine's Python) for TAGCSIM_CUDA_LIBS;
#       2. tagcsim calibrate box --quick --scenario scenarios/quickstart.yaml  (OUTDIR/box/);
#       3. tagcsim calibrate check on the quickstart scaled to the box: its model and training on
#          `cluster: {file: OUTDIR/box/cluster-*.yaml}`, every policy (OUTDIR/check/);
#       4. kernels/gpu-check.sh run with what is left of the budget (OUTDIR/kernels/).
#     TAGCSIM_BOX_FULL=1 runs the full box (the GEMM grid and attention sweep, up to 300 s) instead
#     of --quick; TAGCSIM_SKIP_KERNELS=1 skips step 4 (a rerun after the kernels passed);
#     TAGCSIM_TORCH_GEMMS=1 runs `calibrate/torch-fsdp-step.py OUTDIR 100 --gemms` before step 4
#     where the machine's Python has PyTorch (OUTDIR/torch-fsdp-step-gemms.json);
#     TAGCSIM_TORCH_MEMORY=1 runs its `--memory-pressure` mode likewise (OUTDIR/torch-fsdp-step-
#     memory-pressure.json: the step under a shrinking allocator cap, retries per step);
#     TAGCSIM_TORCH_PROFILE=1 its `--profile` mode (OUTDIR/torch-fsdp-step-profile.json: kernels per
#     step, the attention backend SDPA chose, the allocated peak of each phase of the step);
#     TAGCSIM_TORCH_NOFSDP=1 its `--without-fsdp` mode (OUTDIR/torch-fsdp-step-without-fsdp.json: each
#     configuration under fully_shard on one GPU and as a plain module, bf16 parameters both);
#     TAGCSIM_TORCH_FLEX=1 runs `calibrate/torch-flex-attention.py OUTDIR/flex 90` (FlexAttention
#     against SDPA's flash kernel, whole sequences and packed documents; in results.tar.gz).
#     Steps past the budget are skipped and say so. OUTDIR/summary.txt has one line per step. At the
#     end the folders are packed into OUTDIR/results.tar.gz and the reports copied beside it, so
#     OUTDIR holds at most 8 files (what the device tool brings back); TAGCSIM_NO_PACK=1 keeps
#     the folders. The exit status is 0 only when every step that ran passed (3: the bundle
#     cannot start or sees no GPU). One GPU is enough: NCCL over one GPU is trivial, the NVLink
#     fit is skipped with a note, and the check runs the one-GPU step.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
base_libs='^(linux-vdso|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libresolv|libutil)\.so'
cxx_libs='^(libstdc\+\+|libgcc_s)\.so'
die() { echo "gpu-run: $*" >&2; exit 1; }

prepare() {
  local build=${1:-build}
  command -v nvcc >/dev/null || die "nvcc not on PATH: the CUDA measurement code cannot be built"
  cd "$here" || exit 1
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTAGCSIM_CUDA=ON >/dev/null || die "cmake failed"
  grep -rq "TAGCSIM_HAVE_BOX=1" "$build/app/CMakeFiles/tagcsim.dir/flags.make" ||
    die "CMake did not enable calibrate box's GPU side (nvcc, nccl.h and cublasLt.h are needed)"
  cmake --build "$build" --target tagcsim -j"$(nproc)" >/dev/null || die "build failed"
  local stage=$build/calibrate-bundle
  rm -rf "$stage" && mkdir -p "$stage/lib/cxx" || die "cannot write $stage"
  cp "$build/tagcsim" "$stage/" || die "cannot copy tagcsim"
  [[ $(readelf -d "$stage/tagcsim" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p') == '$ORIGIN/lib' ]] ||
    die "tagcsim does not look for libraries in \$ORIGIN/lib (tagcsim_gpu_bundle_rpath in app/CMakeLists.txt)"
  while read -r name path; do
    if [[ $name =~ $cxx_libs ]]; then cp -L "$path" "$stage/lib/cxx/$name"
    elif ! [[ $name =~ $base_libs ]]; then cp -L "$path" "$stage/lib/$name"; fi
  done < <(/lib64/ld-linux-x86-64.so.2 --list "$build/tagcsim" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  # Every library the bundle needs resolves inside it, the loader path naming lib/ as run() does
  # (the GPU machine may lack libsimgrid's own needs, such as libboost_context).
  local outside
  outside=$(env -i LD_LIBRARY_PATH="$stage/lib" /lib64/ld-linux-x86-64.so.2 --list "$stage/tagcsim" |
    awk '$2 == "=>" {print $1, $3}' | grep -vE "$base_libs|$cxx_libs" | grep -v " $stage/lib/")
  [[ -z $outside ]] || die "the bundle's libraries resolve outside it: $outside"
  {
    echo "tagcsim calibrate bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git describe --always --dirty 2>/dev/null || echo '?')"
    echo "nvcc: $(nvcc --version | tail -1); CUDA runtime static; NCCL, cuBLASLt, cuDNN, NVML opened at run time"
    (cd "$stage" && find . -type f ! -name MANIFEST.txt -printf '%s %P\n' | sort -k2)
  } >"$stage/MANIFEST.txt"
  # The bundle starts with an empty environment and stops only for the missing GPU.
  local out rc
  out=$(env -i "$stage/tagcsim" calibrate box --dry-run --quick 2>&1) || die "env -i tagcsim calibrate box --dry-run failed: $out"
  out=$(env -i "$stage/tagcsim" calibrate box --quick --out "$build/calibrate-bundle-probe" 2>&1)
  rc=$?
  rm -rf "$build/calibrate-bundle-probe"
  if [[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 && $out == *"no GPU to measure"* ]]; then
    echo "gpu-run: env -i tagcsim calibrate box (exit 2): $out"
  elif nvidia-smi >/dev/null 2>&1; then
    echo "gpu-run: env -i tagcsim calibrate box ran on this machine's GPU (exit $rc)"
  else
    die "env -i tagcsim calibrate box: exit $rc, expected exit 2 and one 'no GPU' line: $out"
  fi
  tar -C "$build" -cJf "$build/calibrate-bundle.tar.xz" calibrate-bundle || die "cannot pack the bundle"
  echo "gpu-run: bundle: $build/calibrate-bundle.tar.xz ($(du -h "$build/calibrate-bundle.tar.xz" | cut -f1), $(du -sh "$stage" | cut -f1) unpacked)"
  bash "$here/kernels/gpu-check.sh" prepare "$build" | tail -2 || die "kernels/gpu-check.sh prepare failed"
  echo "gpu-run: on the GPU machine: bash calibrate/gpu-run.sh \$OUT 540   (carry [\"$build/calibrate-bundle.tar.xz\", \"$build/gpu-bundle\"])"
}

run() {
  local out=${1:-} budget=${2:-540}
  [[ -n $out ]] || die "usage: bash calibrate/gpu-run.sh OUTDIR [BUDGET_SECONDS]"
  [[ $budget =~ ^[0-9]+$ && $budget -ge 120 ]] || die "BUDGET_SECONDS: expected a whole number >= 120, got '$budget'"
  mkdir -p "$out" || die "cannot write $out"
  out=$(cd "$out" && pwd)
  cd "$here" || exit 1
  local deadline=$((SECONDS + budget)) status=0
  : >"$out/summary.txt"
  step() { echo "$1" | tee -a "$out/summary.txt"; }
  left() { echo $((deadline - SECONDS)); }
  timed() {  # timed LIMIT LOG cmd...: at most LIMIT seconds (and what is left)
    local limit=$1 log=$2 t
    shift 2
    t=$(left)
    ((limit < t)) || limit=$t
    ((limit > 5)) || return 124
    timeout -k 5 "$limit" "$@" >"$log" 2>&1
  }

  # 1. The machine, the bundle, the libraries.
  { nvidia-smi 2>&1; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.memory --format=csv 2>&1
    uname -a; ldd --version 2>&1 | head -1; nproc; } >"$out/machine.txt"
  local bundle=${TAGCSIM_CALIBRATE_BUNDLE:-}
  if [[ -z $bundle ]]; then
    [[ -f build/calibrate-bundle.tar.xz ]] || die "build/calibrate-bundle.tar.xz missing: run 'bash calibrate/gpu-run.sh prepare' here and carry it"
    bundle=$(mktemp -d)/calibrate-bundle
    tar -C "$(dirname "$bundle")" -xJf build/calibrate-bundle.tar.xz || die "cannot unpack the bundle"
  fi
  local tagcsim=$bundle/tagcsim
  # RUNPATH ($ORIGIN/lib) serves tagcsim's own needs only, not those of the libraries it loads
  # (libsimgrid needs libboost_context): the loader path names the bundle for all of them.
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TAGCSIM_DATA_DIR=$here/calibrate/profiles
  # NCCL, cuBLASLt and cuDNN: the toolkit's, or the nvidia-* wheels of the machine's Python.
  local dirs="" d
  shopt -s extglob
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia, os; [print(os.path.join(p, d, "lib")) for p in nvidia.__path__ for d in os.listdir(p)]' 2>/dev/null); do
    compgen -G "$d/lib@(nccl|cublasLt|cudnn).so*" >/dev/null && dirs+="${dirs:+:}$d"
  done
  export TAGCSIM_CUDA_LIBS=$dirs
  if ! timed 60 "$out/start.log" "$tagcsim" calibrate box --dry-run --quick; then
    mv "$out/start.log" "$out/start-system-libstdc++.log"
    export LD_LIBRARY_PATH="$bundle/lib/cxx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    timed 60 "$out/start.log" "$tagcsim" calibrate box --dry-run --quick || {
      step "start: FAIL: the bundle does not start here (start*.log)"; exit 3; }
    step "start: with the bundled C++ runtime (lib/cxx)"
  fi
  if grep -q 'no GPU here' "$out/start.log"; then
    step "start: FAIL: $(grep -o 'no GPU here.*' "$out/start.log")"
    exit 3
  fi
  step "start: ok: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | tr -d '\n') x $(nvidia-smi -L 2>/dev/null | wc -l); CUDA libraries from: ${TAGCSIM_CUDA_LIBS:-the loader search path}"

  # 2. The box, quick.
  local rc=0
  local quick=--quick box_limit=170
  [[ -n ${TAGCSIM_BOX_FULL:-} ]] && quick="" box_limit=300
  timed $box_limit "$out/box.log" "$tagcsim" calibrate box $quick --scenario scenarios/quickstart.yaml --out "$out/box" || rc=$?
  local cluster
  cluster=$(ls "$out"/box/cluster-*.yaml 2>/dev/null | head -1)
  if [[ $rc -eq 0 && -n $cluster ]]; then
    step "box: ok: $(tail -1 "$out/box.log")"
  else
    status=1
    step "box: FAIL (exit $rc): $(grep -m1 -E 'error|Error' "$out/box.log")"
  fi

  # 3. The check: the quickstart's model and training on this box.
  if [[ -z $cluster ]]; then
    step "check: skipped: no cluster file from the box step"
  elif (($(left) < 60)); then
    step "check: skipped: $(left) s left of the budget"
  else
    mkdir -p "$out/check"
    sed "s|^cluster:.*|cluster: {file: $cluster}|; /^  preset: dgx/d; /^  nodes: 4/d; s|^name: quickstart|name: quickstart-on-this-box|" \
      scenarios/quickstart.yaml >"$out/check/quickstart-box.yaml"
    rc=0
    timed $(($(left) > 300 ? 240 : $(left) - 40)) "$out/check.log" "$tagcsim" calibrate check "$out/check/quickstart-box.yaml" \
      --out "$out/check" || rc=$?
    if [[ $rc -eq 0 ]]; then step "check: ok: $(grep -A4 '^Step time' "$out/check.log" | tail -n +3 | tr -s ' ' | paste -sd ';')"
    else status=1; step "check: FAIL (exit $rc): $(grep -m1 -E 'error|Error' "$out/check.log")"; fi
  fi

  # 3b-3d. PyTorch's own measurements where asked and PyTorch is there (120 s each): its GEMMs at
  # the box's shapes; the step under memory pressure, what the caching allocator's retries cost;
  # the kernels and the per-phase memory peaks of one step.
  # torch_mode LABEL MODE LOG PATTERN UNIT: the mode of calibrate/torch-fsdp-step.py, and how many
  # lines of its log match PATTERN.
  torch_mode() {
    if ! python3 -c 'import torch' >/dev/null 2>&1; then
      step "$1: skipped: no PyTorch in this machine's python3"
    elif (($(left) < 130)); then
      step "$1: skipped: $(left) s left of the budget"
    else
      rc=0
      timed 120 "$out/$3" python3 calibrate/torch-fsdp-step.py "$out" 100 "$2" || rc=$?
      if [[ $rc -eq 0 ]]; then step "$1: ok: $(grep -c "$4" "$out/$3") $5"
      else status=1; step "$1: FAIL (exit $rc): $(tail -1 "$out/$3")"; fi
    fi
  }
  [[ -n ${TAGCSIM_TORCH_GEMMS:-} ]] && torch_mode "torch gemms" --gemms torch-gemms.log '^gemm ' "shapes timed"
  [[ -n ${TAGCSIM_TORCH_MEMORY:-} ]] &&
    torch_mode "torch memory pressure" --memory-pressure torch-memory.log '^memory .*: cap' "caps timed"
  [[ -n ${TAGCSIM_TORCH_PROFILE:-} ]] &&
    torch_mode "torch profile" --profile torch-profile.log '^profile ' "configurations profiled"
  [[ -n ${TAGCSIM_TORCH_NOFSDP:-} ]] &&
    torch_mode "torch without fsdp" --without-fsdp torch-nofsdp.log '^without-fsdp .*ratio' "configurations timed both ways"
  # 3e. FlexAttention against SDPA's flash kernel, whole sequences and packed documents (90 s).
  if [[ -n ${TAGCSIM_TORCH_FLEX:-} ]]; then
    if ! python3 -c 'import torch' >/dev/null 2>&1; then step "torch flex: skipped: no PyTorch in this machine's python3"
    elif (($(left) < 110)); then step "torch flex: skipped: $(left) s left of the budget"
    else
      rc=0
      timed 110 "$out/torch-flex.log" python3 calibrate/torch-flex-attention.py "$out/flex" 90 || rc=$?
      if [[ $rc -eq 0 ]]; then step "torch flex: ok: $(grep -c '^flex .*TFLOP' "$out/torch-flex.log") calls timed"
      else status=1; step "torch flex: FAIL (exit $rc): $(tail -1 "$out/torch-flex.log")"; fi
    fi
  fi

  # 4. The TAGC kernels' own GPU checks, with what is left.
  if [[ -n ${TAGCSIM_SKIP_KERNELS:-} ]]; then
    step "kernels: skipped: TAGCSIM_SKIP_KERNELS is set"
  elif [[ ! -d build/gpu-bundle ]]; then
    step "kernels: skipped: build/gpu-bundle not carried (bash kernels/gpu-check.sh prepare)"
  elif (($(left) < 75)); then
    step "kernels: skipped: $(left) s left of the budget"
  else
    rc=0
    bash kernels/gpu-check.sh run "$out/kernels" $(($(left) - 10)) >"$out/kernels.log" 2>&1 || rc=$?
    if [[ $rc -eq 0 ]]; then step "kernels: ok: $(tail -1 "$out/kernels.log")"
    else status=1; step "kernels: FAIL (exit $rc): $(grep -m1 FAIL "$out/kernels/summary.txt" 2>/dev/null)"; fi
  fi

  step "gpu-run: results in $out, exit $status"
  if [[ -z ${TAGCSIM_NO_PACK:-} ]]; then
    for f in box/report.txt:box-report.txt check/check-report.txt:check-report.txt box/measurements.yaml:measurements.yaml; do
      [[ -f $out/${f%%:*} ]] && cp "$out/${f%%:*}" "$out/${f##*:}"
    done
    (cd "$out" && tar -czf results.tar.gz --exclude=results.tar.gz box check kernels flex ./*.log 2>/dev/null; rm -rf box check kernels flex ./*.log)
  fi
  exit $status
}

case "${1:-}" in
  prepare) prepare "${2:-build}" ;;
  ""|-h|--help) sed -n '2,38p' "$0"; exit 2 ;;
  *) run "$1" "${2:-}" ;;
esac
