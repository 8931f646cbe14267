#!/bin/sh
# Predicted against measured gain of missed fusions on one GPU machine
# (issue 17): the models given, as inference (INFERENCE, default all) and
# as training steps (TRAIN),
# side by side (timings one at a time under one lock); writes $OUT/NAME.json,
# .md, .png (predictions.py) and NAME.log.
#   FORK_REVISION=<sha> JOBS=4 sh benchmarks/fusion/gpu/predictions.sh NAME MODELS TRAIN
set -u
name=$1 models=$2 train=$3
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=2
python3 tools/fork.py run -- true > "$OUT/$name.build.txt" 2>&1
timeout "${DEADLINE_S:-540}" python3 tools/fork.py run -- python3 benchmarks/fusion/predictions.py \
    --device cuda --shapes full --jobs "${JOBS:-4}" --gpu-lock /tmp/predictions_gpu.lock \
    --models "$models" --inference "${INFERENCE:-all}" --train "$train" --top "${TOP:-5}" \
    --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
echo "exit $?" >> "$OUT/$name.log"
tail -n 40 "$OUT/$name.log"
