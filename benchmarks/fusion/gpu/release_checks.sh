#!/bin/sh
# The fork's GPU checks on a release carried to the GPU machine by
# tools/gpu_env.py (its parts sent and staged first; see the README's GPU
# section), each STAGE inside one 10-minute device command:
#
#   FORK_REVISION=<rev> sh benchmarks/fusion/gpu/release_checks.sh RELEASE STAGE  # writes $OUT
#
# STAGE:
#   tests      every CUDA test class (pytest-xdist, WORKERS processes) and the
#              remark coverage of the default model set in default mode (full
#              shapes) and max-autotune-no-cudagraphs (AUTOTUNE_SHAPES, CI
#              shapes unless set; four processes, or one a model with
#              AUTOTUNE_EACH=1), side by side (DEFAULT_MODELS and
#              AUTOTUNE_MODELS narrow either model set; with AUTOTUNE_EACH=1
#              an entry MODEL:STEP runs one step; CUDA_TESTS=0 runs no
#              tests); with BEFORE=DIR (a
#              copy of files of an earlier tree, paths as in the repository)
#              the tests named by BEFORE_K also run on the tree with those
#              files, to show a failure the current tree fixes
#   benchmarks side by side, timing one at a time under one lock: the one-pass
#              pass against eager and the release's default on the headline
#              shapes (bf16 and fp16; softmax, log-softmax, cross-entropy,
#              layer and RMS norm; rows of 4096, 32768, 50257 and 128256,
#              2^27 elements a case), CUDA-graph replays, the arms of a case
#              interleaved in ROUNDS rounds (5; 0: one after another as each
#              compiles) (reductions.py); and
#              the launch-bound combo pass on the default model set, arms
#              interleaved round by round, CUDA-graph step times and profiler
#              kernel time (ablation.py); COMBO=0 leaves the model set out;
#              STEPS=gpt2_lm,llama_lm then times those training steps with the
#              pass on and off (reductions_models.py; SEQ, BATCH, VOCAB: N or
#              MODEL=N,...); CODE=1 keeps each compiled arm's generated code
#              (reductions.py --code-dir, under code/)
#   focus      named tests, a probe and a small reductions sweep, one after
#              another (a change under way; the variables below, at the stage)
set -u
release=$1
stage=$2
# The results name the fork's revision, and the GPU machine's copy of .git can
# be stale (on 2026-11-27 it named a commit three sessions old): the revision
# comes from here, FORK_REVISION=$(git rev-parse --short=12 HEAD) computed
# before the command is sent.
if [ -z "${FORK_REVISION:-}" ]; then
    echo "error: set FORK_REVISION to this tree's revision, computed where the tree was committed (the GPU machine's .git may be stale)" >&2
    exit 2
fi
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=${THREADS:-2}
# the carried release: unpack (a no-op once done) and put it first
python3 tools/gpu_env.py unpack "$release" >"$OUT/unpack.txt" 2>&1 || {
    cat "$OUT/unpack.txt"
    exit 1
}
export "$(tail -n 1 "$OUT/unpack.txt")"
# the machine's torchaudio (built for its own torch's CUDA) refuses a carried
# torch of another CUDA, and transformers imports it: a virtualenv of the
# machine's packages without it comes first on PATH
python3 tools/gpu_env.py hide torchaudio >"$OUT/hide.txt" 2>&1 || {
    cat "$OUT/hide.txt"
    exit 1
}
export "$(tail -n 1 "$OUT/hide.txt")"
# the packages outside torch/ (the viewer, the FX fusion backend, whose
# entry point registers backend="fx_fusion"), installed beside the release
python3 -m pip install -q --no-index --no-deps --no-build-isolation \
    --target /tmp/fork-packages ./packages/fusion_viewer ./packages/fx_fusion \
    >"$OUT/packages.txt" 2>&1 || {
    cat "$OUT/packages.txt"
    exit 1
}
export PYTHONPATH=/tmp/fork-packages${PYTHONPATH:+:$PYTHONPATH}
# Triton 3.9 resolves its ptxas-blackwell on Hopper too: a part packed with an
# older --shrink lacks it, and the Hopper ptxas serves
ptxas=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin'))" 2>/dev/null)
if [ -n "$ptxas" ] && [ ! -e "$ptxas/ptxas-blackwell" ]; then
    export TRITON_PTXAS_BLACKWELL_PATH="$ptxas/ptxas"
fi
python3 tools/fork.py run -- python3 -c "
import torch, triton, sys
print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda,
      'cudnn', torch.backends.cudnn.version(), 'nccl', torch.cuda.nccl.version(),
      torch.cuda.get_device_name(), 'python', sys.version.split()[0], torch.version.fork)
" >"$OUT/versions.txt" 2>&1 || {
    cat "$OUT/versions.txt"
    exit 1
}
cat "$OUT/versions.txt"
deadline=${DEADLINE_S:-540}
# The device tool brings back at most 8 files: everything under OUT leaves
# as one archive, STAGE.tgz.
bundle() {
    tar czf "/tmp/$stage.tgz" -C "$OUT" . && find "$OUT" -mindepth 1 -delete &&
        mv "/tmp/$stage.tgz" "$OUT/$stage.tgz"
}
# the default model set (benchmarks/fusion/models.py MODELS)
models=${MODELS:-resnet18,mobilenet_v3_small,vit_small,convnext_tiny,bert,gpt2,t5_small,llama_small,gru,sin_cos,softmax,layer_norm_gelu,two_axis_reductions}
case "$stage" in
tests)
    if [ -n "${BEFORE:-}" ]; then
        rm -rf /tmp/before && mkdir -p /tmp/before && cp -r . /tmp/before/
        cp -r "$BEFORE"/. /tmp/before/
        (cd /tmp/before && timeout "$deadline" python3 tools/fork.py \
            run -- python3 -m pytest -v -p no:cacheprovider test/inductor/test_launch_bound_combo.py \
            -k "${BEFORE_K:-Cuda}" >"$OUT/before.log" 2>&1) &
    fi
    # Every CUDA-only class; a test's own skip says why where it needs more
    # (CUDA_TESTS=0 leaves them out, to give the coverage runs the machine).
    [ "${CUDA_TESTS:-1}" = 0 ] || timeout "$deadline" python3 tools/fork.py run -- python3 -m pytest -v -p no:cacheprovider \
        -n "${WORKERS:-6}" --dist load \
        test/inductor/test_fusion_ablation.py test/inductor/test_fusion_remarks_crossings.py \
        benchmarks/fusion/test/test_fusion_benchmark_tools.py \
        benchmarks/fusion/test/test_fusion_predictions.py benchmarks/fusion/test/test_fusion_verdict.py test/inductor/test_fusion_remarks.py \
        test/inductor/test_fusion_reason_rules.py benchmarks/fusion/test/test_fusion_study.py \
        packages/fx_fusion/test/test_fx_fusion.py packages/fx_fusion/test/test_fx_fusion_codegen.py \
        test/inductor/test_launch_bound_combo.py benchmarks/fusion/test/test_model_set_switches.py test/inductor/test_one_pass_reductions.py \
        test/inductor/test_one_pass_reductions_correctness.py test/inductor/test_one_pass_reductions_aligned.py \
        test/inductor/test_one_pass_reductions_split_rows.py test/inductor/test_one_pass_reductions_kept_loops.py \
        -k "GPU or Cuda or cuda or OpInfo or Properties" >"$OUT/tests.log" 2>&1 &
    timeout "$deadline" python3 tools/fork.py run -- python3 benchmarks/fusion/coverage.py \
        --device cuda --modes default --shapes "${SHAPES:-full}" --models "${DEFAULT_MODELS:-$models}" \
        --json "$OUT/coverage_default.json" >"$OUT/coverage_default.log" 2>&1 &
    # max-autotune-no-cudagraphs: convolutions against ATen only (whole-CNN
    # autotuning takes minutes a model), in four processes (convnext_tiny and
    # bert, the longest, in one of their own)
    mkdir -p "$OUT/autotune"
    set -- $(echo "${AUTOTUNE_MODELS:-$models}" | tr , ' ')
    shards="$(echo "$@" | cut -d' ' -f1-3)
$(echo "$@" | cut -d' ' -f4-5)
$(echo "$@" | cut -d' ' -f6-8)
$(echo "$@" | cut -d' ' -f9-)"
    # AUTOTUNE_EACH=1: one process a model instead (full shapes: each
    # model's GEMM shapes autotune for minutes, one after another in a shard)
    [ "${AUTOTUNE_EACH:-0}" = 1 ] && shards=$(echo "$@" | tr ' ' '\n')
    shard=0
    # (a here-document, not a pipe: the loop stays in this shell, so that
    # wait waits for the processes it starts)
    while read -r part; do
        [ -n "$part" ] || continue
        shard=$((shard + 1))
        # (AUTOTUNE_EACH=1: an entry MODEL:STEP runs that step only)
        steps=inference,training
        case "$part" in *:*) steps=${part#*:} part=${part%%:*} ;; esac
        TORCHINDUCTOR_MAX_AUTOTUNE_CONV_BACKENDS=ATEN timeout "$deadline" python3 tools/fork.py run -- \
            python3 benchmarks/fusion/coverage.py --device cuda --modes max-autotune-no-cudagraphs \
            --shapes "${AUTOTUNE_SHAPES:-ci}" --models "$(echo "$part" | tr ' ' ,)" --steps "$steps" \
            --json "$OUT/autotune/part$shard.json" >"$OUT/autotune/part$shard.log" 2>&1 &
    done <<EOF
$shards
EOF
    wait
    tail -n 2 "$OUT/before.log" 2>/dev/null
    grep -E "FAILED|ERROR" "$OUT/tests.log" | head -n 20
    tail -n 1 "$OUT/tests.log"
    tail -n 30 "$OUT/coverage_default.log"
    for log in "$OUT"/autotune/*.log; do grep -E "max-autotune" "$log" | grep -v "^{"; done
    bundle
    ;;
benchmarks)
    # One sweep process per op and the model set side by side: they compile
    # in parallel and time one at a time under one lock.
    lock=/tmp/release_checks_gpu.lock
    mkdir -p "$OUT/reductions"
    for op in $(echo "${OPS:-softmax,log_softmax,cross_entropy,layer_norm,rms_norm}" | tr , ' '); do
        timeout "$deadline" python3 tools/fork.py run -- python3 benchmarks/fusion/reductions.py \
            --device cuda --cuda-graph --arms "${ARMS:-eager,default,one_pass}" --ops "$op" \
            --dtypes "${DTYPES:-bfloat16,float16}" --rows "${ROWS:-4096,32768,50257,128256}" \
            --total "${TOTAL:-134217728}" --pass "${PASSES:-forward}" --deadline-s $((deadline - 60)) \
            --rounds "${ROUNDS:-5}" ${CODE:+--code-dir "$OUT/code"} \
            --gpu-lock "$lock" --json "$OUT/reductions/$op.json" >"$OUT/reductions/$op.log" 2>&1 &
    done
    if [ "${COMBO:-1}" != 0 ]; then
        timeout "$deadline" python3 tools/fork.py run -- python3 benchmarks/fusion/ablation.py \
            --device cuda --shapes full --models "$models" --train "${TRAIN:-resnet18,bert}" \
            --arms "${COMBO_ARMS:-default,launch_bound_combo}" --jobs "${JOBS:-3}" \
            --repeats "${REPEATS:-200}" --gpu-lock "$lock" \
            --json "$OUT/combo_models.json" >"$OUT/combo_models.log" 2>&1 &
    fi
    wait
    # then, alone on the GPU, the model steps named by STEPS (reductions_models.py)
    if [ -n "${STEPS:-}" ]; then
        timeout "${STEPS_S:-240}" python3 tools/fork.py run -- python3 benchmarks/fusion/reductions_models.py \
            --models "$STEPS" --dtypes bfloat16 --seq "${SEQ:-1024}" --batch "${BATCH:-4}" \
            --rounds 5 --kernels ${VOCAB:+--vocab "$VOCAB"} --json "$OUT/models.json" \
            >"$OUT/models.log" 2>&1
        tail -n 3 "$OUT/models.log" | cut -c1-200
    fi
    python3 tools/fork.py run -- python3 benchmarks/fusion/reductions.py \
        --merge "$OUT"/reductions/*.json --json "$OUT/reductions.json" >/dev/null 2>&1
    grep -h " us" "$OUT"/reductions/*.log | cut -c1-160 | head -n 45
    tail -n 22 "$OUT/combo_models.log" 2>/dev/null | cut -c1-200
    bundle
    ;;
focus)
    # One piece of work at a time, for a change under way: the tests named by
    # TESTS (pytest -k FOCUS_K) for at most TESTS_S seconds, then the command
    # PROBE (if set, for at most PROBE_S seconds), then PROBE_2 and PROBE_3
    # (PROBE_2_S, PROBE_3_S; PROBE_S unless set), then a reductions sweep (OPS, ARMS, DTYPES, ROWS,
    # ROW_COUNTS, TOTAL, PASSES; ROUNDS: arms interleaved) in one process until the deadline.
    start=$(date +%s)
    if [ -n "${TESTS:-}" ]; then
        timeout "${TESTS_S:-240}" python3 tools/fork.py run -- python3 -m pytest -v \
            -p no:cacheprovider $TESTS -k "${FOCUS_K:-Cuda or cuda or GPU}" \
            >"$OUT/tests.log" 2>&1
        grep -E "FAILED|ERROR|Error" "$OUT/tests.log" | head -n 20
        tail -n 1 "$OUT/tests.log"
    fi
    if [ -n "${PROBE:-}" ]; then
        timeout "${PROBE_S:-120}" python3 tools/fork.py run -- $PROBE >"$OUT/probe.log" 2>&1
        tail -n 12 "$OUT/probe.log"
    fi
    # PROBE_2 and PROBE_3 likewise, each with its own OUT (probe_2/, probe_3/)
    for n in 2 3; do
        eval "probe=\${PROBE_$n:-}" "probe_s=\${PROBE_${n}_S:-\${PROBE_S:-120}}"
        if [ -n "$probe" ]; then
            mkdir -p "$OUT/probe_$n"
            OUT="$OUT/probe_$n" timeout "$probe_s" python3 tools/fork.py run -- $probe \
                >"$OUT/probe_$n/probe.log" 2>&1
            tail -n 12 "$OUT/probe_$n/probe.log"
        fi
    done
    left=$((deadline - $(date +%s) + start))
    if [ -n "${ARMS:-}" ] && [ "$left" -gt 60 ]; then
        timeout "$left" python3 tools/fork.py run -- python3 benchmarks/fusion/reductions.py \
            --device cuda --cuda-graph --arms "$ARMS" --ops "${OPS:-softmax}" \
            --dtypes "${DTYPES:-bfloat16}" --rows "${ROWS:-50257}" \
            --total "${TOTAL:-134217728}" --pass "${PASSES:-forward}" \
            ${ROW_COUNTS:+--row-counts "$ROW_COUNTS"} ${ROUNDS:+--rounds "$ROUNDS"} \
            ${CODE:+--code-dir "$OUT/code"} \
            --deadline-s $((left - 30)) --json "$OUT/reductions.json" \
            >"$OUT/reductions.log" 2>&1
        grep " us" "$OUT/reductions.log" | cut -c1-160 | head -n 60
    fi
    bundle
    ;;
*)
    echo "error: unknown stage $stage (tests, benchmarks, focus)" >&2
    exit 2
    ;;
esac
