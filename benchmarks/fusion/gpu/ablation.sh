#!/bin/sh
# The ablation re-measured on one GPU machine (issue 18): the cases given,
# JOBS of them compiled side by side and timed one at a time under a lock,
# each arm by its GPU kernel time, as a replayed CUDA graph, under Inductor's
# CUDA graphs where the arm allows them, and by wall-clock.  Each case is its
# own child process (ablation.py); the rows stream into $OUT/NAME.json.
#   FORK_REVISION=<sha> JOBS=4 sh benchmarks/fusion/gpu/ablation.sh NAME \
#       --models resnet18,bert --train resnet18     # more ablation.py args
set -u
name=$1
shift
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=2
python3 tools/fork.py run -- true > "$OUT/$name.build.txt" 2>&1
timeout "${DEADLINE_S:-540}" python3 tools/fork.py run -- python3 benchmarks/fusion/ablation.py \
    --device cuda --shapes full --jobs "${JOBS:-4}" --gpu-lock /tmp/ablation_gpu.lock \
    --json "$OUT/$name.json" "$@" > "$OUT/$name.log" 2>&1
echo "exit $?" >> "$OUT/$name.log"
tail -n 40 "$OUT/$name.log"
