#!/bin/sh
# The launch-bound combo pass on one GPU machine, inside one 10-minute device
# command: the micro-benchmarks alone first, then the model set (ablation arms
# ARMS, inference, full shapes, JOBS compiles side by side, timings one at a
# time under a lock) while the pass's CUDA tests run (TESTS: a pytest -k
# expression; empty skips them).  PROFILE=model: where each arm spends GPU
# time on that model (probes/combo_profile.py).  Logs and results go to OUT.
#
#   ARMS=default,combo_kernels,launch_bound_combo JOBS=4 \
#       sh benchmarks/fusion/gpu/launch_bound_combo.sh OUT
set -u
out=$1
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TORCHINDUCTOR_COMPILE_THREADS=${THREADS:-2}
if [ -d .whl ]; then
    pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 tools/fork.py run -- true >/dev/null 2>&1 # build once: parallel builds would race
start=$(date +%s)
if [ -n "${MICRO:-1}" ] && [ "${MICRO:-1}" != 0 ]; then
    timeout "${MICRO_S:-150}" python3 tools/fork.py run -- python3 benchmarks/fusion/probes/combo_micro.py \
        --json "$out/combo_micro.json" >"$out/micro.log" 2>&1
fi
if [ -n "${PROFILE:-}" ]; then
    timeout "${PROFILE_S:-120}" python3 tools/fork.py run -- python3 benchmarks/fusion/probes/combo_profile.py \
        "$PROFILE" --arms "${PROFILE_ARMS:-default,combo_kernels,launch_bound_combo}" >"$out/profile.log" 2>&1
fi
if [ -n "${TESTS-Cuda or cuda}" ]; then
    timeout "${TESTS_S:-400}" python3 tools/fork.py run -- python3 -m pytest -v -x -p no:cacheprovider \
        test/inductor/test_launch_bound_combo.py -k "${TESTS-Cuda or cuda}" >"$out/tests.log" 2>&1 &
fi
if [ -n "${MODELS-all}" ]; then
    left=$((${DEADLINE_S:-560} - ($(date +%s) - start)))
    timeout "$left" python3 tools/fork.py run -- python3 benchmarks/fusion/ablation.py --device cuda \
        --shapes full --models "${MODELS:-all}" --train "${TRAIN:-}" \
        --arms "${ARMS:-default,combo_kernels,launch_bound_combo}" --jobs "${JOBS:-4}" --repeats "${REPEATS:-200}" \
        --gpu-lock /tmp/launch_bound_combo_gpu.lock --json "$out/models.json" >"$out/models.log" 2>&1
fi
wait
tail -n 3 "$out/tests.log" 2>/dev/null
cat "$out/combo_micro.md" 2>/dev/null
python3 benchmarks/fusion/ablation.py --plot "$out/models.json" 2>/dev/null | tail -n 20
