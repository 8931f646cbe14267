#!/bin/sh
# Rerun single cases of the full-shape GPU study, one process per case side by
# side on one GPU machine: they compile in parallel and take their timings one
# at a time (--gpu-lock).  Each case writes OUT/<case>/ and OUT/<case>.log;
# merge them with the other shards: `study.py merge OUT/*/ ... --out DIR`.
# Each process stops after DEADLINE_S seconds (default 560, inside a 10-minute
# device command).  Extra study.py arguments go after `--`.
#
#   sh benchmarks/fusion/gpu/cases.sh OUT CASE [CASE ...] [-- study.py args]
set -u
out=$1
shift
cases=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    cases="$cases $1"
    shift
done
[ $# -gt 0 ] && shift
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=2
mkdir -p "$out"
python3 tools/fork.py run -- true  # build once: parallel builds would race
deadline=${DEADLINE_S:-560}
for c in $cases; do
    timeout "$deadline" python3 tools/fork.py run -- python3 benchmarks/fusion/study.py \
        --device cuda --shapes full --steps inference,training \
        --modes default,max-autotune-no-cudagraphs --cases "$c" \
        --gpu-lock /tmp/fusion_study_gpu.lock --no-pages \
        --case-timeout $((deadline - 15)) --out "$out/$c" "$@" >"$out/$c.log" 2>&1 &
done
wait
