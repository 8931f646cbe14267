#!/bin/sh
# Device runs of issue 19 at its final rules (one device command each, H100):
#   sh benchmarks/fusion/gpu_reductions_final.sh STAGE [SWEEP ARGS...]   # writes $OUT
# STAGE: models (T5 at 2048 tokens, where its attention softmax rows leave
# Inductor's persistent limit, with per-kernel GPU time), or sweep NAME (the
# reductions.py sweep, default against the pass, under CUDA graphs, with the
# remaining arguments, into $OUT/NAME.json and .md).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 tools/fork.py run -- true > "$OUT/build.txt" 2>&1 || { cat "$OUT/build.txt"; exit 1; }
stage=$1
shift
case "$stage" in
models)
    timeout "${MODELS_TIMEOUT:-420}" python3 tools/fork.py run -- python3 \
        benchmarks/fusion/reductions_models.py --models t5_lm --dtypes bfloat16 \
        --seq 2048 --rounds 3 --kernels --json "$OUT/models_t5_seq2048.json" \
        > "$OUT/models.txt" 2>&1
    tail -n 20 "$OUT/models.txt"
    ;;
sweep)
    name=$1
    shift
    python3 tools/fork.py run -- python3 benchmarks/fusion/reductions.py \
        --device cuda --cuda-graph --arms default,one_pass \
        --json "$OUT/$name.json" "$@" > "$OUT/$name.txt" 2>&1
    tail -n 4 "$OUT/$name.txt"
    grep -c " us" "$OUT/$name.txt"
    ;;
*)
    echo "unknown stage $stage: models or sweep NAME" >&2
    exit 2
    ;;
esac
