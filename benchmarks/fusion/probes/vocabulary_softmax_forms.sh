#!/bin/sh
# Where the pass's softmax at GPT-2's vocabulary width loses to eager's
# (issue 39): the forms of a bfloat16 softmax at SHAPE (2670x50257 unless
# set), one probe after another on one GPU, logs and JSON into OUT:
#
#   1. one read, the row held in registers (reductions_one_read_registers.py);
#   2. hand-written two-read loops, masked or aligned, two exps an element or
#      one, beside the pass's and default's softmax
#      (reductions_lean_combine.py --hand);
#   3. the pass's generated kernels at rows of 50257, aligned steps on and
#      off, with their PTX loads by width (aligned_kernel_source.py).
#
# Run as the release_checks.sh focus stage's PROBE (inside tools/fork.py run):
#   PROBE="sh benchmarks/fusion/probes/vocabulary_softmax_forms.sh"
set -u
OUT=${OUT:-/tmp}
SHAPE=${SHAPE:-2670x50257}
here=benchmarks/fusion/probes
python3 "$here/reductions_one_read_registers.py" --shapes "$SHAPE" >"$OUT/one_read.log" 2>&1
tail -n 7 "$OUT/one_read.log" | cut -c1-160
python3 "$here/reductions_lean_combine.py" --hand --shapes "$SHAPE" >"$OUT/hand.log" 2>&1
tail -n 9 "$OUT/hand.log" | cut -c1-160
python3 "$here/aligned_kernel_source.py" >"$OUT/kernels.log" 2>&1
tail -n 6 "$OUT/kernels.log" | cut -c1-160
