#!/bin/sh
# The GPU acceptance run of the explicit hooks (one device command, H100):
# the CUDA test classes, and remark coverage on the default model set at CI
# shapes under default and max-autotune-no-cudagraphs, side by side.  .whl/
# holds expecttest and jsonschema (with its dependencies) for Python 3.12.
#   FORK_REVISION=<sha> sh benchmarks/fusion/gpu/hooks_check.sh   # writes $OUT
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 tools/fork.py --overlay /tmp/fork build > "$OUT/check.txt" 2>&1
python3 tools/fork.py --overlay /tmp/fork check >> "$OUT/check.txt" 2>&1
# Build run's overlay once: three runs building it at the same time race.
python3 tools/fork.py run -- true
MODELS=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks/fusion'); from models import MODELS; print(','.join(MODELS))")
python3 tools/fork.py run -- python3 -m pytest -v -p no:cacheprovider \
    test/inductor/test_fusion_remarks.py::TestFusionRemarksGPU \
    test/inductor/test_launch_bound_combo.py::TestLaunchBoundComboCuda \
    packages/fx_fusion/test/test_fx_fusion.py::TestFxFusionCuda \
    packages/fx_fusion/test/test_fx_fusion_codegen.py::TestFxFusionCodegenCuda \
    benchmarks/fusion/test/test_model_set_switches.py::TestAblationModelsGPU \
    benchmarks/fusion/test/test_model_set_switches.py::TestLaunchBoundComboModelsCuda \
    > "$OUT/cuda_tests.txt" 2>&1 &
python3 tools/fork.py run -- python3 benchmarks/fusion/coverage.py --device cuda \
    --models "$MODELS" --modes default --shapes ci --json "$OUT/coverage_default.json" \
    > "$OUT/coverage_default.txt" 2>&1 &
TORCHINDUCTOR_MAX_AUTOTUNE_CONV_BACKENDS=ATEN python3 tools/fork.py run -- \
    python3 benchmarks/fusion/coverage.py --device cuda --models "$MODELS" \
    --modes max-autotune-no-cudagraphs --shapes ci \
    --json "$OUT/coverage_max_autotune.json" > "$OUT/coverage_max_autotune.txt" 2>&1 &
wait
tail -n 3 "$OUT/check.txt"
tail -n 3 "$OUT/cuda_tests.txt"
tail -n 16 "$OUT/coverage_default.txt"
tail -n 16 "$OUT/coverage_max_autotune.txt"
