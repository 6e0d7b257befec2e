#!/usr/bin/env bash
# Regenerates every table of docs/tagc-paper.md from the scenarios, as markdown on stdout:
#   scenarios/tagc-paper.yaml               the reference setup, 2 nodes x 1 GPU, swept over bandwidth
#   scenarios/tagc-scaling-gpt2.yaml        GPT-2 at 8, 64, 512 GPUs
#   scenarios/tagc-scaling-llama2-7b.yaml   Llama-2 7B at 8, 64, 512 GPUs
# plus variants of them that this script writes to a temporary directory (sed on the files above):
# one setting changed at 2 ranks, a 4-bit SUM index at 8 GPUs, and 8 nodes x 1 GPU.
#
# Usage: scripts/tagc-paper-tables.sh [--plot] > /tmp/tables.md
#   --plot   also redraws docs/tagc-paper-bandwidth.png (needs gnuplot)
#   TAGCSIM  the binary (default: build/tagcsim)
# Paste the sections into docs/tagc-paper.md when the model changes (tests/test_docs_numbers.cpp
# fails until every row is there). The prose there quotes these numbers, so reread it when they move.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TAGCSIM:-$root/build/tagcsim}
[[ -x $bin ]] || { echo "tagc-paper-tables.sh: no tagcsim at $bin (build it, or set TAGCSIM)" >&2; exit 2; }
plot=0
for a in "$@"; do
  case $a in
    --plot) plot=1 ;;
    *) echo "usage: $0 [--plot]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"

paper=scenarios/tagc-paper.yaml
gpt2=scenarios/tagc-scaling-gpt2.yaml
llama=scenarios/tagc-scaling-llama2-7b.yaml

# csv FILE OUT: the scenario's results as CSV (notes and warnings go to stderr, dropped).
csv() { "$bin" run "$1" --format csv > "$2" 2> "$2.log" || { cat "$2.log" >&2; exit 1; }; }

# variant SRC OUT SED...: SRC with each sed expression applied; each must change something.
variant() {
  local src=$1 out=$2
  shift 2
  cp "$src" "$out"
  for e in "$@"; do
    cp "$out" "$out.before"
    sed -i -e "$e" "$out"
    if cmp -s "$out" "$out.before"; then
      echo "tagc-paper-tables.sh: '$e' changes nothing in $src; update this script" >&2
      exit 1
    fi
  done
}

# Shared awk: column lookup by header name (per file) and number formats.
awk_lib='
FNR == 1 { delete c; for (i = 1; i <= NF; i++) c[$i] = i; next }
function v(name) { if (!(name in c)) { print "missing column " name > "/dev/stderr"; exit 1 } return $c[name] }
function t(s) { return s < 1 ? sprintf("%.3f", s) : s < 100 ? sprintf("%.2f", s) : sprintf("%.0f", s) }
function x(s) { return sprintf("%.3fx", s) }
function e(s) { return s == 0 ? "0" : sprintf("%.2g", s) }
'

# ------------------------------------------------------------------ 2 ranks, swept over bandwidth
csv "$paper" "$tmp/paper.csv"
"$bin" run "$paper" --format json > "$tmp/paper.json" 2> /dev/null

echo "### Table 1: the reference setup (scenarios/tagc-paper.yaml), step time and speedup vs bandwidth"
echo
# One step and one speedup column per policy, in the scenario's order (fsdp first).
awk -F, "$awk_lib"'
{ b = v("cluster.nics.bandwidth"); p = v("policy")
  if (!(b in seen)) { seen[b] = 1; order[++n] = b }
  if (!(p in known)) { known[p] = 1; pols[++np] = p }
  st[b, p] = v("step_time_s"); sp[b, p] = v("speedup_vs_fsdp"); er[p] = v("expected_grad_error") }
END {
  head = "| bandwidth | fsdp step (s) |"; rule = "|---|---:|"
  for (j = 2; j <= np; j++) { head = head " " pols[j] " step (s) | " pols[j] " speedup |"; rule = rule "---:|---:|" }
  print head; print rule
  for (i = 1; i <= n; i++) { b = order[i]; line = "| " b " | " t(st[b, "fsdp"]) " |"
    for (j = 2; j <= np; j++) line = line " " t(st[b, pols[j]]) " | " x(sp[b, pols[j]]) " |"
    print line }
  line = "\nExpected relative gradient error (the same at every bandwidth):"
  for (j = 2; j <= np; j++) line = line sprintf(" %s %s%s", pols[j], e(er[pols[j]]), j < np ? "," : ".")
  print line
}' "$tmp/paper.csv"
echo

echo "### Table 2: where the time goes at 2 ranks (seconds per step)"
echo
awk -F, "$awk_lib"'
BEGIN { print "| bandwidth | policy | step | compute stream (incl. kernels) | compression kernels | exposed comm | all-gathers busy | gradient reductions busy |"
        print "|---|---|---:|---:|---:|---:|---:|---:|" }
{ b = v("cluster.nics.bandwidth"); if (b != "1 Gb/s" && b != "10 Gb/s" && b != "100 Gb/s") next
  printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", b, v("policy"), t(v("step_time_s")), t(v("compute_s")),
         t(v("compression_kernels_s")), t(v("exposed_comm_s")), t(v("allgather_s")), t(v("reduce_scatter_s")) }
' "$tmp/paper.csv"
echo

echo "### Table 3: bytes each node sends per step at 2 ranks (GB), from the collectives' accounting"
echo
# The JSON has one collective per line inside "collectives"; take the first sweep point (bytes do
# not depend on bandwidth). A reduce is booked as NCCL runs it, a chain of n-1 hops: (n-1)/n S per node.
awk '
/"point":/ { if (first == "") first = $0; else if ($0 != first) exit }
/"policy":/ { match($0, /"policy": "[^"]*"/); pol = substr($0, RSTART + 11, RLENGTH - 12); pols[++np] = pol }
/"node_egress_bytes":/ && !/"network"/ {
  match($0, /^ *"[^"]*"/); name = substr($0, RSTART, RLENGTH); gsub(/^ *"|"$/, "", name)
  match($0, /"node_egress_bytes": [0-9.e+]+/); b = substr($0, RSTART + 21, RLENGTH - 21) + 0
  kind = name ~ /all_gather/ ? "ag" : name ~ /index/ ? "idx" : name ~ /sketch/ ? "sk" : "rs"
  by[pol, kind] += b; tot[pol] += b }
END {
  print "| policy | all-gathers | plain reduce-scatters | index | sketches | total | fsdp total / total |"
  print "|---|---:|---:|---:|---:|---:|---:|"
  for (i = 1; i <= np; i++) { p = pols[i]
    printf "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", p, by[p, "ag"] / 1e9, by[p, "rs"] / 1e9,
           by[p, "idx"] / 1e9, by[p, "sk"] / 1e9, tot[p] / 1e9, tot["fsdp"] / tot[p] }
}' "$tmp/paper.json"
echo

echo "### Table 4: one setting changed at a time, 2 ranks (speedup over fsdp at 1 / 10 / 100 Gb/s)"
echo
three='s/^\(  cluster\.nics\.bandwidth:\).*/\1 [1 Gb\/s, 10 Gb\/s, 100 Gb\/s]/'
variant "$paper" "$tmp/v0.yaml" "$three"
variant "$paper" "$tmp/v1.yaml" "$three" 's/no_sync: false/no_sync: true/'
variant "$paper" "$tmp/v2.yaml" "$three" 's/param_dtype: fp32/param_dtype: bf16/'
variant "$paper" "$tmp/v3.yaml" "$three" 's/ratio: 2\([,}]\)/ratio: 4\1/g'
variant "$paper" "$tmp/v4.yaml" "$three" 's/sparsify: bisect/sparsify: topk/'
variant "$paper" "$tmp/v5.yaml" "$three" 's/index: 1bit-sum/index: 1bit-or/'
variant "$paper" "$tmp/v6.yaml" "$three" 's/index: 4bit-sum/index: 1bit-or/'
variant "$paper" "$tmp/v7.yaml" "$three" 's/tf32: true/tf32: false/'
variant "$paper" "$tmp/v8.yaml" "$three" 's/^\(  tf32: true.*\)$/\1\n  reduce_scatter_group: separate/'
labels=("as in tagc-paper.yaml"
        "no_sync: true (gradients reduced once per step)"
        "param_dtype: bf16 (all-gathers halved; reduction stays fp32)"
        "ratio 4 (every compressing policy)"
        "tagc with sparsify: topk"
        "tagc with index: 1bit-or"
        "tagc-batched with index: 1bit-or (an OR reduce-scatter: send/recv ring with an OR kernel)"
        "tf32: false (plain FP32 matmuls, 19.5 TFLOP/s)"
        "reduce_scatter_group: separate (FSDP's reduce-scatters on a communicator of their own)")
# The compressing policies of the scenario, in its order; batched is shortened to fit.
pols=$(awk -F, "$awk_lib"'{ p = v("policy"); if (p != "fsdp" && !(p in s)) { s[p] = 1; printf "%s ", p } }' "$tmp/paper.csv")
short() { [[ $1 == tagc-batched ]] && echo batched || echo "$1"; }
{
  head="| variant |"; rule="|---|"
  for p in $pols; do for b in 1G 10G 100G; do head+=" $(short "$p") $b |"; rule+="---:|"; done; done
  for p in $pols; do head+=" error $(short "$p") |"; rule+="---:|"; done
  echo "$head"; echo "$rule"
  for i in "${!labels[@]}"; do
    csv "$tmp/v$i.yaml" "$tmp/v$i.csv"
    awk -F, -v label="${labels[$i]}" -v pols="$pols" "$awk_lib"'
    { b = v("cluster.nics.bandwidth"); p = v("policy"); sp[b, p] = v("speedup_vs_fsdp"); er[p] = v("expected_grad_error") }
    END { np = split(pols, P, " "); line = "| " label " |"
          for (j = 1; j <= np; j++) line = line " " x(sp["1 Gb/s", P[j]]) " | " x(sp["10 Gb/s", P[j]]) " | " x(sp["100 Gb/s", P[j]]) " |"
          for (j = 1; j <= np; j++) line = line " " e(er[P[j]]) " |"
          print line }' "$tmp/v$i.csv"
  done
}
echo

# ------------------------------------------------------------------ 8, 64, 512 GPUs
# scale NAME SCENARIO: the scenario as written (8bit-max), its 8-GPU points with a 4-bit SUM
# index, and 8 nodes x 1 GPU on the Ethernet presets (4-bit SUM).
scale() {
  local name=$1 src=$2
  csv "$src" "$tmp/$name-8bit.csv"
  variant "$src" "$tmp/$name-4bit.yaml" 's/index: 8bit-max/index: 4bit-sum/' \
    's/^\(  cluster\.nodes:\).*/\1 [1]/'
  csv "$tmp/$name-4bit.yaml" "$tmp/$name-4bit.csv"
  variant "$src" "$tmp/$name-8x1.yaml" 's/index: 8bit-max/index: 4bit-sum/' \
    's/^\(  cluster\.nodes:\).*/\1 [8]/' 's/^\(  cluster\.preset:\).*/\1 [eth-25g, eth-100g]/' \
    's/^cluster: eth-25g /cluster: {preset: eth-25g, gpus_per_node: 1} /'
  csv "$tmp/$name-8x1.yaml" "$tmp/$name-8x1.csv"
  awk -F, "$awk_lib"'
  FNR == 2 { f = FILENAME; sub(/.*-/, "", f); sub(/\.csv$/, "", f) }
  { pre = v("cluster.preset"); nodes = v("cluster.nodes"); gpus = v("gpus"); p = v("policy")
    if (f == "8bit" && gpus + 0 <= 15) next   # there the batched policy runs with 4bit-sum
    wrap = ("training.wrap" in c) ? v("training.wrap") : ""
    idx = f == "8bit" ? "8bit-max" : "4bit-sum"
    k = pre SUBSEP gpus SUBSEP nodes SUBSEP wrap SUBSEP idx
    if (!(k in seen)) { seen[k] = 1; keys[++n] = k
      pr[k] = pre; gp[k] = gpus; nd[k] = nodes; wr[k] = wrap; ix[k] = idx }
    st[k, p] = v("step_time_s"); sp[k, p] = v("speedup_vs_fsdp"); er[k, p] = v("expected_grad_error") }
  END {
    haswrap = wr[keys[1]] != ""
    printf "| cluster | GPUs | nodes x GPUs |%s fsdp step (s) | tagc step (s) | tagc speedup | batched index | tagc-batched step (s) | tagc-batched speedup | error tagc | error batched |\n", haswrap ? " wrap |" : ""
    printf "|---|---:|---|%s---:|---:|---:|---|---:|---:|---:|---:|\n", haswrap ? "---|" : ""
    # order: preset as first seen, then GPUs, then 8 x 8 before 8 x 1 ... , wrap, index
    for (i = 1; i <= n; i++) rank[i] = i
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) {
      a = keys[rank[i]]; b = keys[rank[j]]
      if (before(b, a)) { tmp = rank[i]; rank[i] = rank[j]; rank[j] = tmp } }
    for (i = 1; i <= n; i++) { k = keys[rank[i]]
      printf "| %s | %d | %d x %d |%s %s | %s | %s | %s | %s | %s | %s | %s |\n", pr[k], gp[k], nd[k], gp[k] / nd[k],
             haswrap ? " " wr[k] " |" : "", t(st[k, "fsdp"]), t(st[k, "tagc"]), x(sp[k, "tagc"]), ix[k],
             t(st[k, "tagc-batched"]), x(sp[k, "tagc-batched"]), e(er[k, "tagc"]), e(er[k, "tagc-batched"]) }
  }
  function before(a, b,   A, B) {
    split(a, A, SUBSEP); split(b, B, SUBSEP)
    if (A[1] != B[1]) return porder[A[1]] < porder[B[1]]
    if (A[2] != B[2]) return A[2] + 0 < B[2] + 0
    if (A[3] != B[3]) return A[3] + 0 < B[3] + 0
    if (A[4] != B[4]) return A[4] > B[4]          # size before block
    return A[5] > B[5]                            # 8bit-max before 4bit-sum
  }
  FNR > 1 && !(v("cluster.preset") in porder) { porder[v("cluster.preset")] = ++npre }
  ' "$tmp/$name-8bit.csv" "$tmp/$name-4bit.csv" "$tmp/$name-8x1.csv"
}

echo "### Table 5: GPT-2 (scenarios/tagc-scaling-gpt2.yaml), paper's training setup"
echo
scale gpt2 "$gpt2"
echo
echo "### Table 6: Llama-2 7B (scenarios/tagc-scaling-llama2-7b.yaml)"
echo
scale llama "$llama"
echo

echo "### Table 7: decode load against ranks (sparsity 0.8, ratio 2, independent nonzero positions)"
echo
# Load = union density x ratio, union density = 1 - 0.8^N. Recovered fraction (of the union's
# nonzeros, decoded exactly) and error as the reports give them: GPT-2 on eth-25g, and at 2 ranks
# tagc-paper.yaml at 1 Gb/s (where tagc-batched uses 4bit-sum; beyond 15 ranks it uses 8bit-max).
# LHC sketches the dense gradient, so its load is the ratio whatever the ranks; only tagc-paper.yaml
# runs it.
"$bin" run "$gpt2" --format json > "$tmp/gpt2.json" 2> /dev/null
awk '
/"point":/ { pt = $0; keep = FILENAME ~ /paper/ ? pt ~ /"1 Gb\/s"/ : pt ~ /"eth-25g"/ }
/"policy":/ { match($0, /"policy": "[^"]*"/); pol = substr($0, RSTART + 11, RLENGTH - 12) }
/"gpus":/ { g = $2; sub(/,/, "", g); N = g + 0 }
/"expected_grad_error":/ { er = $2; sub(/,/, "", er) }
/"grad_error_basis":/ && keep && pol != "fsdp" {
  if (!(N in seen)) { seen[N] = 1; ns[++n] = N }
  match($0, /recovered fraction [0-9.]+/); rf[N, pol] = substr($0, RSTART + 19, RLENGTH - 19)
  err[N, pol] = er + 0 }
END {
  print "| ranks | union density 1-0.8^N | load (x ratio 2) | tagc (1bit-sum): recovered*, error | tagc-batched (OR index): recovered*, error | lhc (dense, load 2.0): recovered*, error |"
  print "|---:|---:|---:|---:|---:|---:|"
  for (i = 1; i <= n; i++) { N = ns[i]; d = 1 - 0.8 ^ N
    lhc = (N, "lhc") in rf ? sprintf("%s, %.2g", rf[N, "lhc"], err[N, "lhc"]) : "not run"
    printf "| %d | %.3f | %.2f | %s, %.2g | %s, %.2g | %s |\n", N, d, 2 * d, rf[N, "tagc"], err[N, "tagc"],
           rf[N, "tagc-batched"], err[N, "tagc-batched"], lhc }
  print "\n\\* Recovered fraction of the one unit the report names, the worst-decoded one (at 2 ranks an MLP"
  print "shard); the error is over the whole model."
}' "$tmp/paper.json" "$tmp/gpt2.json"
echo

if (( plot )); then
  "$bin" run "$paper" --plot docs/tagc-paper-bandwidth.png > /dev/null 2>&1
  echo "(plot redrawn: docs/tagc-paper-bandwidth.png)" >&2
fi
