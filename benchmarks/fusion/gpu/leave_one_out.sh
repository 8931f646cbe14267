#!/bin/sh
# Leave one out on one GPU machine (issue 17, item 5): which option that
# fusion_only holds makes the gap between fusion_only and default.  The
# models given (inference, ablation.py's interleaved rounds and four
# measures) and, with BANDWIDTH=1, the memory-bound micro-benchmarks in
# bfloat16 (bandwidth.py: softmax 32768 x 4096 among them), side by side,
# timings under one lock.  Writes $OUT/NAME.json and $OUT/bandwidth_loo.json.
#   FORK_REVISION=<sha> JOBS=3 BANDWIDTH=1 sh benchmarks/fusion/gpu/leave_one_out.sh NAME MODELS
set -u
name=$1 models=$2
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=2
python3 tools/fork.py run -- true > "$OUT/$name.build.txt" 2>&1
if [ "${BANDWIDTH:-0}" = 1 ]; then
    TORCHINDUCTOR_FX_GRAPH_CACHE=0 timeout "${DEADLINE_S:-540}" python3 tools/fork.py run -- \
        python3 benchmarks/fusion/bandwidth.py --device cuda --dtypes bfloat16 \
        --arms eager,leave_one_out --gpu-lock /tmp/ablation_gpu.lock \
        --json "$OUT/bandwidth_loo.json" > "$OUT/bandwidth_loo.log" 2>&1 &
fi
timeout "${DEADLINE_S:-540}" python3 tools/fork.py run -- python3 benchmarks/fusion/ablation.py \
    --device cuda --shapes full --jobs "${JOBS:-3}" --gpu-lock /tmp/ablation_gpu.lock \
    --models "$models" --train none --arms eager,leave_one_out \
    --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
echo "exit $?" >> "$OUT/$name.log"
wait
tail -n 5 "$OUT/$name.log"
tail -n 30 "$OUT/bandwidth_loo.log" 2>/dev/null
