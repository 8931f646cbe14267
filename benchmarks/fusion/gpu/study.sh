#!/bin/sh
# Shards FIRST..LAST of N of the full-shape study, side by side on one GPU
# machine: they compile in parallel and take their timings one at a time
# (--gpu-lock).  Each shard writes OUT/shardI/ and OUT/shardI.log; merge them
# with `study.py merge OUT/shard*/ --out DIR`.  Each shard stops after
# DEADLINE_S seconds (default 530, inside a 10-minute device command), keeping
# the cases it finished.
#
#   sh benchmarks/fusion/gpu/study.sh N FIRST LAST OUT [extra study.py args]
set -u
n=$1 first=$2 last=$3 out=$4
shift 4
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=2
mkdir -p "$out"
python3 tools/fork.py run -- true  # build once: parallel builds would race
for i in $(seq "$first" "$last"); do
    timeout "${DEADLINE_S:-530}" python3 tools/fork.py run -- python3 benchmarks/fusion/study.py \
        --device cuda --shapes full --steps inference,training \
        --modes default,max-autotune-no-cudagraphs --shard "$i/$n" \
        --gpu-lock /tmp/fusion_study_gpu.lock --no-pages \
        --out "$out/shard$i" "$@" >"$out/shard$i.log" 2>&1 &
done
wait
