# Owner(s): ["module: inductor"]
"""What the one-pass reduction pass (torch/_inductor/one_pass_reductions.py)
reads off a fused reduction kernel, from real CPU compiles: its phases, the
phases that read the row from memory, a gather from another buffer, the
row-long inputs it holds, and whether its rows are contiguous.

The decision made from these facts is tested in
test_one_pass_reductions_decision.py, the pass in real compiles in
test_one_pass_reductions.py.
"""

import torch
import torch.nn.functional as F
from torch._inductor import config, one_pass_reduction_rows as rows_of
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import sympy_product


def _fused_nodes_of(fn, *args):
    """The scheduler nodes after fusion of ``fn`` compiled on the CPU."""
    seen = []

    def keep(nodes):
        seen.extend(nodes)
        return nodes

    torch._dynamo.reset()
    with config.patch(_post_fusion_custom_pass=keep, fx_graph_cache=False):
        torch.compile(fn)(*args)
    return seen


def _reduction_kernels(nodes):
    return [n for n in nodes if n.is_reduction()]


def _of_each_reduction_kernel(analysis, fn, *args):
    """``analysis(nodes, numel, row)`` of each reduction kernel of ``fn``
    compiled on the CPU, with the kernel's fused nodes, its elements (rows
    times row length) and its row length."""
    found = []

    def keep(nodes):
        for node in _reduction_kernels(nodes):
            # CPU groups are (sizes, reduction sizes).
            numel, rnumel = map(sympy_product, node.group[1])
            found.append(analysis(node.get_nodes(), numel * rnumel, rnumel))
        return nodes

    torch._dynamo.reset()
    with config.patch(_post_fusion_custom_pass=keep, fx_graph_cache=False):
        torch.compile(fn)(*args)
    return found


class TestPhases(TestCase):
    def phases_of(self, fn, *args):
        kernels = _reduction_kernels(_fused_nodes_of(fn, *args))
        self.assertEqual(len(kernels), 1, [k.get_name() for k in kernels])
        return rows_of.phases(kernels[0].get_nodes())

    def test_softmax_reads_a_row_three_times(self):
        # max, sum of exp, normalization; the online rewrite (max and sum in
        # one phase: 2, see test_one_pass_reductions.py's TestCuda) applies to
        # GPU graphs only.
        x = torch.randn(8, 64)
        self.assertEqual(self.phases_of(lambda t: torch.softmax(t, -1), x), 3)

    def test_layer_norm_reads_a_row_twice_by_welford(self):
        # Rows longer than use_two_step_variance_threshold (2.14.1) take
        # Welford's one-pass statistics; shorter ones two steps, mean first.
        x = torch.randn(8, 2048)
        self.assertEqual(
            self.phases_of(lambda t: torch.nn.functional.layer_norm(t, (2048,)), x), 2
        )
        short = torch.randn(8, 64)
        self.assertIn(
            self.phases_of(lambda t: torch.nn.functional.layer_norm(t, (64,)), short),
            (2, 3),
        )

    def test_a_sum_reads_a_row_once(self):
        x = torch.randn(8, 64)
        self.assertEqual(self.phases_of(lambda t: t.sin().sum(-1), x), 1)

    def test_memory_passes_count_only_phases_that_read_the_row(self):
        """Cross-entropy's backward sums its one-hot gradient from indices in
        a phase of its own, then reads the logits once: two phases, one pass
        over memory (on the H100 a wide loop made GPT-2's such kernel 13%
        slower, reductions_h100_ce_backward_one_read.md).  Softmax reads the
        row in each of its three phases."""
        row = 2048

        def passes_of(fn, *args):
            return _of_each_reduction_kernel(
                lambda nodes, numel, row: (
                    rows_of.phases(nodes),
                    rows_of.memory_passes(nodes, numel, row),
                ),
                fn,
                *args,
            )

        x = torch.randn(8, row)
        self.assertEqual(
            [p[:2] for p in passes_of(lambda t: torch.softmax(t, -1), x)], [(3, 3)]
        )
        logits = torch.randn(8, row, requires_grad=True)
        target = torch.randint(0, row, (8,))

        def loss_grad(t, y):
            return torch.autograd.grad(F.cross_entropy(t, y), t)[0]

        found = passes_of(loss_grad, logits, target)
        # The backward's kernel: two phases, the first without a row read.
        self.assertIn((2, 1), [p[:2] for p in found], found)

    def test_a_gather_from_another_buffer_is_seen_and_a_target_logit_is_not(self):
        """A softmax adding a bias looked up per element (T5's position
        bias) gathers from a table; a loss gathering its target logit from
        its own rows does not, nor does a plain softmax."""
        row = 64
        x, table = torch.randn(8, row), torch.randn(32)
        idx = torch.randint(0, 32, (row,))
        target = torch.randint(0, row, (8,))
        cases = (
            (
                "bias_lookup",
                lambda t, tb, i: torch.softmax(t + tb[i], -1),
                (x, table, idx),
                True,
            ),
            ("softmax", lambda t: torch.softmax(t, -1), (x,), False),
            (
                "nll",
                lambda t, y: F.cross_entropy(t, y, reduction="none"),
                (x, target),
                False,
            ),
        )
        for name, fn, args, expected in cases:
            with self.subTest(op=name):
                found = _of_each_reduction_kernel(rows_of.gathers, fn, *args)
                self.assertTrue(found)
                self.assertEqual(any(found), expected, found)

    def test_row_inputs_count_row_long_loads_not_row_values(self):
        """Softmax holds its input; RMS norm its input and weight; layer
        norm with weight and bias three; a loss gathering one target per row
        holds only the logits."""
        row = 64
        x, w, b = torch.randn(8, row), torch.randn(row), torch.randn(row)
        target = torch.randint(0, row, (8,))
        cases = (
            ("softmax", lambda t: torch.softmax(t, -1), (x,), 1),
            ("rms_norm", lambda t, w: F.rms_norm(t, (row,), w), (x, w), 2),
            ("layer_norm", lambda t, w, b: F.layer_norm(t, (row,), w, b), (x, w, b), 3),
            (
                "nll",
                lambda t, y: F.cross_entropy(t, y, reduction="none"),
                (x, target),
                1,
            ),
        )
        for name, fn, args, expected in cases:
            with self.subTest(op=name):
                counts = _of_each_reduction_kernel(rows_of.row_inputs, fn, *args)
                self.assertEqual(max(counts), expected)


class TestSumsOnly(TestCase):
    def sums_only_of_each(self, fn, *args):
        return _of_each_reduction_kernel(
            lambda nodes, numel, row: (
                rows_of.sums_only(nodes),
                rows_of.memory_passes(nodes, numel, row),
            ),
            fn,
            *args,
        )

    def test_norms_and_backward_kernels_sum_and_softmax_and_welford_do_not(self):
        """An RMS norm's forward and the backward of a softmax, a
        log-softmax and an RMS norm only sum, each reading its row twice; a
        softmax's forward takes a max, and layer norm's forward at rows over
        the CPU's two-step threshold (1024) a Welford reduction."""
        row = 2048
        x = torch.randn(8, row, requires_grad=True)
        w = torch.randn(row, requires_grad=True)
        g = torch.randn(8, row)

        def backward_of(op):
            return lambda t: torch.autograd.grad(op(t), t, g)[0]

        summing = {
            "rms_norm forward": lambda t: F.rms_norm(t, (row,), w),
            "softmax backward": backward_of(lambda t: torch.softmax(t, -1)),
            "log_softmax backward": backward_of(lambda t: torch.log_softmax(t, -1)),
            "rms_norm backward": backward_of(lambda t: F.rms_norm(t, (row,))),
        }
        for name, fn in summing.items():
            with self.subTest(kernel=name):
                found = self.sums_only_of_each(fn, x)
                self.assertIn((True, 2), found, found)
        others = {
            "softmax forward": lambda t: torch.softmax(t, -1),
            "layer_norm forward": lambda t: F.layer_norm(t, (row,)),
        }
        for name, fn in others.items():
            with self.subTest(kernel=name):
                found = self.sums_only_of_each(fn, x.detach())
                self.assertTrue(found)
                self.assertFalse(any(sums for sums, _ in found), found)

    def test_a_two_step_layer_norm_sums_in_three_reads(self):
        """At rows up to the two-step threshold, layer norm's forward takes
        the mean and then the variance about it: sums only, but three reads
        of the row, which on chip saves two."""
        x = torch.randn(8, 64)
        found = self.sums_only_of_each(lambda t: F.layer_norm(t, (64,)), x)
        self.assertEqual(found, [(True, 3)])


class TestRowsContiguous(TestCase):
    def rows_contiguous(self, fn, *args):
        """``rows_contiguous`` of the kernel with the longest rows."""
        found = _of_each_reduction_kernel(
            lambda nodes, numel, row: (
                int(row),
                rows_of.rows_contiguous(nodes, numel, int(row)),
            ),
            fn,
            *args,
        )
        return max(found)[1]

    def test_a_cross_entropy_backward_reads_rows_contiguously(self):
        """Its row sum has no load of its own (upstream's hint: DEFAULT);
        the logits it reads and the gradient it writes are rows."""
        x = torch.randn(64, 4000, requires_grad=True)
        y = torch.randint(0, 4000, (64,))

        def step(t):
            return torch.autograd.grad(F.cross_entropy(t, y), t)[0]

        self.assertTrue(self.rows_contiguous(step, x))

    def test_a_softmax_over_the_outer_dim_does_not(self):
        x = torch.randn(4000, 64)
        self.assertFalse(self.rows_contiguous(lambda t: torch.softmax(t, 0), x))


if __name__ == "__main__":
    run_tests()
