#!/usr/bin/env bash
# Runs scenarios/validation/*.yaml (one per published FSDP throughput entry) and prints predicted
# against measured tokens/s/GPU and MFU. See docs/validation.md.
#
#   scripts/validate-fsdp.sh                                     # presets as shipped
#   scripts/validate-fsdp.sh --set a100:cluster.gpu.gemm_efficiency=0.62 --set h100:cluster.gpu.gemm_efficiency=0.45
#   scripts/validate-fsdp.sh --fit cluster.gpu.gemm_efficiency   # least squares per GPU class on --train, rest held out
#   scripts/validate-fsdp.sh --fit cluster.gpu.gemm_efficiency --scale-by gemm_size_factor \
#       --train 'size=(7|8|13)b .*compile=false.*ac=(none|full)$' --test 'size=(34|70)b .*compile=false.*ac=(none|full)$'
#
# Each scenario has one line `# validation: size=.. measured_tps=.. measured_mfu=.. gpu=CLASS
# compile=.. float8=.. gemm_size_factor=.. ac=..`. --set CLASS:KEY=VALUE applies to one GPU class,
# KEY=VALUE to all; overrides go in as a one-value `sweep:`, so any sweepable key works.
# --scale-by TAG multiplies the fitted value by that tag per entry (gemm_size_factor: GEMM efficiency
# at the model's hidden size relative to 8192-wide GEMMs). float8 entries are listed, never fitted
# or counted: tagcsim has no fp8 GEMMs.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/build/tagcsim"
dir="$root/scenarios/validation"
sets=()
fit_key=""
scale_by=""
train='compile=false'
test='.'
grid="0.30 0.95 0.005"

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --set) sets+=("$2"); shift 2 ;;
    --fit) fit_key=$2; shift 2 ;;
    --scale-by) scale_by=$2; shift 2 ;;
    --train) train=$2; shift 2 ;;     # regex on the validation line: the entries the fit uses
    --test) test=$2; shift 2 ;;       # regex: which of the others are reported as held out
    --grid) grid=$2; shift 2 ;;       # "lo hi step" of the fitted value
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
[[ -x "$bin" ]] || { echo "no tagcsim binary at $bin (build first: cmake --build build)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is required" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tags() { sed -n 's/^# validation: //p' "$1"; }
tag() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }
scale() { [[ -n $scale_by ]] && tag "$scale_by" "$1" || echo 1; }
# "v1, v2, ..." times factor $2
scaled() { awk -v l="$1" -v f="$2" 'BEGIN { n = split(l, v, ", "); for (i = 1; i <= n; i++) printf "%s%.4g", (i > 1 ? ", " : ""), v[i] * f }'; }

# The sweep map of the --set values for GPU class $1, plus an optional extra "key: [values]" $2.
sweep_for() {
  local cls=$1 extra=${2:-} out="" s
  for s in "${sets[@]+"${sets[@]}"}"; do
    if [[ ${s%%=*} == *:* ]]; then [[ ${s%%:*} == "$cls" ]] || continue; s=${s#*:}; fi
    out+="${out:+, }${s%%=*}: [${s#*=}]"
  done
  [[ -n $extra ]] && out+="${out:+, }$extra"
  [[ -z $out ]] || echo "sweep: {$out}"
}

# Runs scenario $1 with its class's overrides (and extra axis $2); prints "tps mfu" per point.
run_one() {
  local f=$1 t
  t="$tmp/$(basename "$1")"
  { cat "$f"; sweep_for "$(tag gpu "$(tags "$f")")" "${2:-}"; } >"$t"
  "$bin" run "$t" --format json | jq -r '.results[] | "\(.tokens_per_s_per_gpu) \(.mfu)"'
}

files=("$dir"/*.yaml)
declare -A fitted=()

# --fit: per GPU class, the value of $fit_key minimizing the sum of squared relative errors over
# the --train entries. One tagcsim run per scenario sweeps the whole grid.
if [[ -n $fit_key ]]; then
  values=$(awk -v g="$grid" 'BEGIN { split(g, a, " "); for (v = a[1]; v <= a[2] + 1e-9; v += a[3]) printf "%s%.4g", (n++ ? ", " : ""), v }')
  : >"$tmp/curves"
  for f in "${files[@]}"; do
    tg=$(tags "$f")
    [[ $(tag float8 "$tg") == true ]] && continue
    grep -Eq "$train" <<<"$tg" || continue
    echo "$(tag gpu "$tg") $(tag measured_tps "$tg") $(run_one "$f" "$fit_key: [$(scaled "$values" "$(scale "$tg")")]" | awk '{printf "%s ", $1}')" >>"$tmp/curves"
  done
  echo "Fit of $fit_key${scale_by:+ (x $scale_by)} per GPU class, least squares on relative error, entries matching /$train/:"
  while read -r c v n rms; do
    printf "  %-10s %s\n" "$c" "$v  ($n entries, rms error $rms%)"
    fitted[$c]=$v
  done < <(awk -v vals="$values" '
    BEGIN { n = split(vals, v, ", ") }
    { cnt[$1]++; for (i = 1; i <= n; i++) sse[$1, i] += ($(i + 2) / $2 - 1) ^ 2 }
    END { for (c in cnt) { b = 1; for (i = 2; i <= n; i++) if (sse[c, i] < sse[c, b]) b = i
            printf "%s %s %d %.1f\n", c, v[b], cnt[c], 100 * sqrt(sse[c, b] / cnt[c]) } }' "$tmp/curves" | sort)
  echo
fi

printf "%-52s %-9s %-4s %-3s %-9s %8s %8s %7s %6s %6s\n" id gpu set cmp ac measured predict err% MFU_m MFU_p
for f in "${files[@]}"; do
  tg=$(tags "$f")
  cls=$(tag gpu "$tg")
  extra=""
  [[ -n $fit_key && -n ${fitted[$cls]:-} ]] && extra="$fit_key: [$(scaled "${fitted[$cls]}" "$(scale "$tg")")]"
  read -r tps mfu < <(run_one "$f" "$extra" | head -1)
  role=all
  if [[ $(tag float8 "$tg") == true ]]; then role=fp8
  elif [[ -n $fit_key ]]; then
    if grep -Eq "$train" <<<"$tg"; then role=fit; elif grep -Eq "$test" <<<"$tg"; then role="test"; else role=-; fi
  fi
  # No published MFU: derived from the measured throughput with tagcsim's FLOPs per token and peak (*).
  awk -v id="$(basename "$f" .yaml)" -v g="$cls" -v r="$role" -v c="$(tag compile "$tg")" -v ac="$(tag ac "$tg")" \
      -v m="$(tag measured_tps "$tg")" -v p="$tps" -v mm="$(tag measured_mfu "$tg")" -v pm="$mfu" 'BEGIN {
    mstr = mm == "-" ? sprintf("%.3f*", pm * m / p) : sprintf("%.3f", mm)
    printf "%-52s %-9s %-4s %-3s %-9s %8.0f %8.0f %+7.1f %6s %6.3f\n", id, g, r, (c == "true" ? "yes" : "no"), ac, m, p, (p / m - 1) * 100, mstr, pm }'
done | tee "$tmp/table"

awk '
  function add(k, e) { e = e < 0 ? -e : e; n[k]++; s[k] += e; if (e > mx[k]) mx[k] = e }
  $3 == "fp8" || $3 == "-" { next }
  { g = $3 == "all" ? "" : ($3 == "fit" ? "fit, " : "held out, "); add(g == "" ? "all" : substr(g, 1, length(g) - 2), $8)
    add(g ($4 == "yes" ? "compiled" : "eager"), $8) }
  END { print ""; for (k in n) printf "%-20s %2d entries: mean |error| %5.1f%%, max |error| %5.1f%%\n", k, n[k], s[k] / n[k], mx[k] }
' "$tmp/table" | sort
