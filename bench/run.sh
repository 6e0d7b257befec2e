#!/usr/bin/env bash
# Speed benchmarks: wall time and peak memory of whole `tagcsim` runs, pinned
# to one core. Usage: bench/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
bin="$build/tagcsim"
pin=""
command -v taskset >/dev/null && pin="taskset -c 0"
printf "%-38s %10s %12s\n" "run" "wall (s)" "max RSS (MB)"
bench() {
  local name=$1; shift
  local out
  out=$( { /usr/bin/time -f "%e %M" $pin "$bin" "$@" >/dev/null; } 2>&1 | tail -1)
  awk -v n="$name" -v w="${out% *}" -v m="${out#* }" 'BEGIN { printf "%-38s %10s %12.0f\n", n, w, m / 1024 }'
}
bench "llama3.1-70b 1,024 GPUs fsdp"   run bench/llama3.1-70b-1k.yaml
bench "llama3.1-70b 16,384 GPUs fsdp"  run bench/llama3.1-70b-16k.yaml
bench "llama3.1-70b 16,384 GPUs tagc"  run bench/llama3.1-70b-16k-tagc.yaml
bench "llama3.1-70b 16,128 GB200 fsdp" run bench/gb200-nvl72-16k.yaml
bench "llama3.1-70b 8,448 GPUs hsdp"   run bench/llama3.1-70b-hsdp-33-leaves.yaml
bench "llama3.1-405b 16,384 GPUs 3D"   run bench/llama3.1-405b-3d-16k.yaml
bench "qwen3-235b MoE 4,096 GPUs"      run bench/qwen3-235b-moe-4k.yaml
bench "qwen3-235b MoE EP 8, 16,384 GPUs" run bench/qwen3-235b-ep-16k.yaml
bench "quickstart (3 policies)"        run scenarios/quickstart.yaml
bench "tagc-paper sweep (7 x 4)"       run scenarios/tagc-paper.yaml
bench "validate (every published row)" validate
if [ -f bench/tune-llama2-70b-1k.yaml ]; then
  bench "tune llama2-70b 1,024 GPUs"   tune bench/tune-llama2-70b-1k.yaml --max-grad-error 0.05
fi
