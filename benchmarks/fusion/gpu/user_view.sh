#!/bin/sh
# The GPU run of issue 16 (one device command, H100): the CUDA test classes
# (the hooks now also hand each Triton kernel's source to the report and give
# upstream's fusion loggers the artifact's levels) and the user's view against
# the generated code on the default model set (user_view_check.py).
#   FORK_REVISION=<sha> sh benchmarks/fusion/gpu/user_view.sh   # writes $OUT
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 tools/fork.py --overlay /tmp/fork build > "$OUT/check.txt" 2>&1
python3 tools/fork.py --overlay /tmp/fork check >> "$OUT/check.txt" 2>&1
python3 tools/fork.py run -- true
python3 tools/fork.py run -- python3 -m pytest -v -p no:cacheprovider \
    test/inductor/test_fusion_remarks.py::TestFusionRemarksGPU \
    test/inductor/test_launch_bound_combo.py::TestLaunchBoundComboCuda \
    packages/fx_fusion/test/test_fx_fusion.py::TestFxFusionCuda \
    benchmarks/fusion/test/test_model_set_switches.py::TestAblationModelsGPU \
    benchmarks/fusion/test/test_model_set_switches.py::TestLaunchBoundComboModelsCuda \
    > "$OUT/cuda_tests.txt" 2>&1 &
python3 tools/fork.py run -- python3 benchmarks/fusion/user_view_check.py \
    --device cuda --out "$OUT/user_view_cuda" > "$OUT/user_view_cuda.txt" 2>&1 &
wait
tail -n 3 "$OUT/check.txt"
tail -n 3 "$OUT/cuda_tests.txt"
cat "$OUT/user_view_cuda.md"
