#!/bin/sh
# Device runs of issue 19 at its final rules (one device command each, H100):
#   sh benchmarks/fusion/gpu/reductions_final.sh STAGE [SWEEP ARGS...]   # writes $OUT
# STAGE: models (T5 at 2048 tokens, where its attention softmax rows leave
# Inductor's persistent limit, with per-kernel GPU time), or sweep NAME (the
# reductions.py sweep, default against the pass, under CUDA graphs, with the
# remaining arguments, into $OUT/NAME.json and .md), vocabulary (the
# issue's two vocabulary shapes, pass against default; the bounds of the forms
# there: a pure read, two reads with no exp, at 50257 the row forced on chip),
# ce_target (cross-entropy with its target logit picked out in the row's
# kernel), or models_final (Llama and GPT-2 at seq 1024, T5 at 2048 tokens).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
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
vocabulary)
    for shape in 2048x50257 8192x128256; do
        timeout 240 python3 tools/fork.py run -- python3 benchmarks/fusion/reductions.py \
            --device cuda --cuda-graph --arms default,one_pass \
            --ops softmax,log_softmax,cross_entropy --rows "${shape#*x}" \
            --row-counts "${shape%x*}" --json "$OUT/vocabulary_$shape.json" \
            >> "$OUT/vocabulary.txt" 2>&1
    done
    mkdir -p "$OUT/bounds_50257" "$OUT/bounds_128256"
    OUT="$OUT/bounds_50257" timeout 150 python3 tools/fork.py run -- python3 \
        benchmarks/fusion/probes/reductions_on_chip_probe.py \
        --ops softmax,amax,max_then_scale --shapes 2048x50257 \
        --on-chip-warps 32 --on-chip-ept 64 --loops "" >> "$OUT/vocabulary.txt" 2>&1
    OUT="$OUT/bounds_128256" timeout 150 python3 tools/fork.py run -- python3 \
        benchmarks/fusion/probes/reductions_on_chip_probe.py \
        --ops amax,max_then_scale --shapes 8192x128256 \
        --on-chip-warps "" --loops "" >> "$OUT/vocabulary.txt" 2>&1
    grep -E " us|^\|" "$OUT/vocabulary.txt" | cut -c1-220 | tail -n 40
    ;;
ce_target)
    mkdir -p "$OUT/ce_target"
    OUT="$OUT/ce_target" timeout 200 python3 tools/fork.py run -- python3 \
        benchmarks/fusion/probes/reductions_on_chip_probe.py \
        --ops cross_entropy,cross_entropy_target_in_row \
        --shapes 65536x2048,32768x4096,16384x8192,8192x16384,4096x32768 \
        --on-chip-warps "" --loops "" > "$OUT/ce_target.txt" 2>&1
    grep " us" "$OUT/ce_target.txt" | cut -c1-220
    ;;
models_final)
    # the model steps at the final rules: Llama and GPT-2 at seq 1024, T5 at 2048
    timeout 280 python3 tools/fork.py run -- python3 \
        benchmarks/fusion/reductions_models.py --models llama_lm,gpt2_lm \
        --dtypes bfloat16 --seq 1024 --rounds 3 --kernels \
        --json "$OUT/models_llama_gpt2_seq1024.json" > "$OUT/models.txt" 2>&1
    timeout 290 python3 tools/fork.py run -- python3 \
        benchmarks/fusion/reductions_models.py --models t5_lm --dtypes bfloat16 \
        --seq 2048 --rounds 3 --kernels --json "$OUT/models_t5_seq2048.json" \
        >> "$OUT/models.txt" 2>&1
    grep -E "^\| [a-z0-9_]+_lm" "$OUT/models.txt" | cut -c1-200
    ;;
*)
    echo "unknown stage $stage: models, sweep NAME, vocabulary, ce_target or models_final" >&2
    exit 2
    ;;
esac
