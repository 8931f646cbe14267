"""The register probe (benchmarks/fusion/probes/triton_kernel_registers.py):
Triton kernels of Inductor's output code compiled here, without a GPU, for
the GPU they were generated for, and the blocks a multiprocessor holds at
once, the rows in flight and the waves of the grid that follow from their
registers, threads and shared memory."""

import json
import math
import sys
import tempfile
import unittest
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


PROBES = Path(__file__).resolve().parents[1] / "probes"
if str(PROBES) not in sys.path:
    sys.path.insert(0, str(PROBES))

import triton_kernel_registers as regs  # noqa: E402


# A kernel in the form of Inductor's output code (ours): a looped row sum
# over 524 rows, one row a block, for an H100's properties.
_ROW_SUM_OUTPUT_CODE = """
triton_red_row_sum_0 = async_compile.triton('triton_red_row_sum_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={'x': 1024, 'r0_': 262144},
    triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}]},
)
@triton.jit
def triton_red_row_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 524
    r0_numel = 256000
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    acc = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        acc += tl.load(in_ptr0 + (r0_index + 256000 * xindex), r0_mask, other=0.0).to(tl.float32)
    tl.store(out_ptr0 + xindex, tl.sum(acc, 1)[:, None])
''', device_str='cuda')
"""


class TestTritonKernelRegisters(TestCase):
    def test_blocks_a_multiprocessor_holds_follow_registers_and_threads(self):
        # sm_90: 65536 registers and 2048 threads a multiprocessor
        self.assertEqual(
            regs.blocks_per_multiprocessor(40, 16, 1088),
            {"blocks": 3, "limited_by": "registers"},
        )
        self.assertEqual(regs.blocks_per_multiprocessor(32, 16, 1088)["blocks"], 4)
        self.assertEqual(
            regs.blocks_per_multiprocessor(16, 16, 1088),
            {"blocks": 4, "limited_by": "threads"},
        )
        self.assertEqual(
            regs.blocks_per_multiprocessor(16, 1, 100_000)["limited_by"], "shared"
        )
        self.assertEqual(regs.waves(524, 396), {"waves": 2, "last_wave_fill": 0.323})
        self.assertEqual(regs.waves(524, 528), {"waves": 1, "last_wave_fill": 0.992})
        with self.assertRaisesRegex(ValueError, "XBLOCK/R0_BLOCK/num_warps"):
            regs.parse_config("1/4096")

    def test_a_kernel_of_output_code_is_compiled_for_its_gpu_without_one(self):
        try:
            import triton
        except ImportError:
            raise unittest.SkipTest("Triton is not installed") from None
        bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
        if not (bin_dir / "cuobjdump").exists() or not (bin_dir / "ptxas").exists():
            raise unittest.SkipTest("Triton's NVIDIA tools are not installed")
        with tempfile.TemporaryDirectory() as tmp:
            code = Path(tmp) / "output_code.py"
            code.write_text(_ROW_SUM_OUTPUT_CODE)
            out = Path(tmp) / "registers.json"
            self.assertEqual(
                regs.main(
                    [str(code), "--configs", "1/1024/4,1/8192/4", "--json", str(out)]
                ),
                0,
            )
            rows = json.loads(out.read_text())
            with self.assertRaisesRegex(ValueError, "no fixed config"):
                regs.measure(
                    "triton_red_row_sum_0",
                    regs.kernel_sources(code.read_text())[0][1],
                    [],
                    Path(tmp),
                )
        small, wide = rows
        self.assertEqual(small["xnumel"], 524)
        # eight elements a thread hold more registers than one
        self.assertGreater(wide["reg"], small["reg"])
        for row in rows:
            blocks = regs.blocks_per_multiprocessor(row["reg"], 4, row["shared"])[
                "blocks"
            ]
            self.assertEqual(row["in_flight"], 132 * blocks)
            self.assertEqual(row["waves"], math.ceil(524 / row["in_flight"]))


if __name__ == "__main__":
    run_tests()
