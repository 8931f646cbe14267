"""The loops of a generated Triton kernel's SASS (benchmarks/fusion/probes/
triton_kernel_registers.py ``--loops``): kernels in the form of Inductor's
output code compiled here, without a GPU, for an H200, and the instructions
an iteration and an element of each loop counted.  Two kernels that move the
same bytes differ in their loops by their arithmetic: a row sum with a
division at each element (as Welford's update has) takes more instructions
an element than the plain sum.
"""

import sys
import tempfile
import unittest
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


PROBES = Path(__file__).resolve().parents[1] / "probes"
if str(PROBES) not in sys.path:
    sys.path.insert(0, str(PROBES))

import triton_kernel_registers as regs  # noqa: E402


# A looped row sum over 883 rows of 151936, one row a block, in the form of
# Inductor's output code (ours); ``{term}`` is what each element adds.
_OUTPUT_CODE = """
triton_red_row_{name}_0 = async_compile.triton('triton_red_row_{name}_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={{'x': 1024, 'r0_': 262144}},
    triton_meta={{'signature': {{'in_ptr0': '*bf16', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {{}}, 'configs': [{{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}}]}},
)
@triton.jit
def triton_red_row_{name}_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 883
    r0_numel = 151936
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    acc = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        v = tl.load(in_ptr0 + (r0_index + 151936 * xindex), r0_mask, other=0.0).to(tl.float32)
        acc += {term}
    tl.store(out_ptr0 + xindex, tl.sum(acc, 1)[:, None])
''', device_str='cuda')
"""


class TestTritonKernelLoops(TestCase):
    def setUp(self):
        super().setUp()
        try:
            import triton
        except ImportError:
            raise unittest.SkipTest("Triton is not installed") from None
        bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
        if not (bin_dir / "cuobjdump").exists() or not (bin_dir / "ptxas").exists():
            raise unittest.SkipTest("Triton's NVIDIA tools are not installed")

    def loops(self, name: str, term: str) -> list[dict]:
        with tempfile.TemporaryDirectory() as tmp:
            code = _OUTPUT_CODE.format(name=name, term=term)
            ((kernel, source),) = regs.kernel_sources(code)
            (row,) = regs.measure(
                kernel,
                source,
                [regs.parse_config("1/4096/16")],
                Path(tmp),
            )
        return row["loops"]

    def test_a_division_an_element_shows_in_the_loop(self):
        (plain,) = self.loops("sum", "v")
        (divided,) = self.loops("mean", "v / (r0_index + 1.0)")
        # 4096 over 16 warps: eight elements a thread an iteration
        for loop in (plain, divided):
            self.assertAlmostEqual(
                loop["per_element"], loop["instructions"] / 8, places=6
            )
            self.assertGreater(loop["ops"].get("LDG", 0), 0, loop["ops"])
        # the division's reciprocal (div.full.f32) and range checks, at every
        # element
        self.assertGreaterEqual(divided["ops"].get("MUFU", 0), 8, divided["ops"])
        self.assertNotIn("MUFU", plain["ops"])
        self.assertGreater(divided["per_element"], plain["per_element"] + 4)

    def test_the_loops_are_printed_with_their_share_an_element(self):
        import contextlib
        import io

        with tempfile.TemporaryDirectory() as tmp:
            code = Path(tmp) / "output_code.py"
            code.write_text(_OUTPUT_CODE.format(name="sum", term="v"))
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                status = regs.main([str(code), "--configs", "1/2048/8", "--loops"])
        self.assertEqual(status, 0)
        self.assertRegex(
            printed.getvalue(),
            r"\n  loop: \d+ instructions an iteration, [\d.]+ an element \(",
        )


if __name__ == "__main__":
    run_tests()
