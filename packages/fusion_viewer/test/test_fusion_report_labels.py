# Owner(s): ["module: inductor"]
"""The page's labels say what the generated code does, in the log's words.

Real captures, rendered to HTML (no browser needed): an extern call's row
lists what it computes and names the kernel that computes its inputs; the
layout copies of a convolution's inputs read as copies; an op with no kernel
says why in words, in the picture too.  The words are the ``fusion`` log's (``fold_names``,
``extern_inputs`` and ``eliminated_words`` are shared with torch's summary).
"""

import functools
import html
import re

import torch
import torch._dynamo
from fusion_viewer import common, graphviz, html as render_html
from torch._inductor import fusion_report
from torch._inductor.test_case import run_tests, TestCase


def text_of(fragment: str) -> str:
    """The text of an HTML fragment, tags removed and whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def kernel_rows(page: str, kind: str) -> list[str]:
    """The kernel table rows of one kind, as HTML."""
    return re.findall(
        rf'<tr class="kernel-row"[^>]*data-kinds="{kind}"[^>]*>.*?</tr>', page, re.S
    )


@functools.cache
def conv_training_step() -> dict:
    torch._dynamo.reset()
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3)
    with fusion_report.capture() as rep:
        torch.compile(lambda x: torch.relu(conv(x)).div(3).sum())(
            torch.randn(2, 3, 8, 8)
        ).backward()
    return rep.to_json()


def rows_twice(x):
    return x.new_ones(x.shape[0] * 2, 4).sum(0) + torch.cat([x, x]).mean(0)


class TestPageLabels(TestCase):
    def test_extern_row_names_the_kernel_of_its_inputs(self):
        data = conv_training_step()
        (backward,) = [
            g for g in data["graphs"] if g["compile_id"].endswith(" backward")
        ]
        (call,) = [k for k in backward["kernels"] if k["kind"] == "fallback"]
        ((function, inputs),) = common.extern_inputs(call, backward)
        self.assertIn(function, backward["kernel_sources"])
        # the buffers the call reads, named as the generated code names them
        read = {
            b["buffer"]
            for b in backward["boundaries"]
            if b["relation"] == "dependency" and b["kernels"][1] == call["name"]
        }
        self.assertEqual({name.split(" ")[0] for name in inputs}, read)
        self.assertTrue(any("where" in name for name in inputs), inputs)
        (row,) = kernel_rows(render_html.render_html(data), "fallback")
        text = text_of(row)
        # one op computed, then the inputs another kernel computes
        self.assertIn("1 op: convolution_backward", text)
        self.assertIn(f"inputs from {function}: {', '.join(inputs)}", text)

    def test_copies_of_a_convolutions_inputs_read_as_copies(self):
        data = conv_training_step()
        page = render_html.render_html(dict(data, graphs=data["graphs"][:1]))
        rows = [text_of(r) for r in kernel_rows(page, "cpp")]
        (copies,) = [r for r in rows if "layout copy for" in r]
        self.assertIn("layout copy for convolution", copies)
        self.assertNotIn("no computing op", copies)

    def test_an_op_with_no_kernel_says_why_in_words(self):
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            torch.compile(rows_twice, dynamic=True)(torch.randn(5, 4))
        page = render_html.render_html(rep.to_json())
        words = common.eliminated_words("symbolic_scalar")
        self.assertTrue(words.startswith("a size (a scalar of symbolic shapes)"))
        self.assertIn(
            f"Computing ops with no kernel of their own: mul: {words}", text_of(page)
        )
        # the annotated source says it at the op's line
        self.assertIn(f"mul has no kernel: {words}", text_of(page))
        # the picture's node, in a few words (the code nowhere), the full
        # words on hover
        (graph,) = rep.to_json()["graphs"]
        dot = graphviz._op_dot(graph, "g0", graphviz.kernel_colours(graph))
        (node,) = [line for line in dot.splitlines() if line.startswith('  "mul" [')]
        self.assertIn('label="mul\\na size, computed where used"', node)
        self.assertIn(f'tooltip="mul: {words}"', node)
        self.assertNotIn("symbolic_scalar", dot)


if __name__ == "__main__":
    run_tests()
