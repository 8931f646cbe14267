# Owner(s): ["module: inductor"]
"""The fork's overlay is live: ``import torch`` is the fork and its hooks run.

These tests compile real functions through ``torch.compile`` and read the
``fusion`` log artifact that the patched ``torch/_inductor/scheduler.py``
opens with a line naming the graph and the fork.  They are fork-only (not
exported upstream): upstream torch has no ``torch.version.fork``.
"""

import os
import re
from unittest import mock

import torch
import torch._dynamo
from torch._inductor.fusion_remarks import (
    hooks as fusion_hooks,
    recorder as fusion_recorder,
)
from torch.testing._internal.common_utils import run_tests
from torch.testing._internal.inductor_utils import GPU_TYPE, HAS_GPU
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test


def sin_cos_with_graph_break(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) + torch.cos(x)
    torch._dynamo.graph_break()
    return torch.relu(y) * 2


def fusion_headers(records) -> list[str]:
    """The first-line-per-graph messages of the fusion artifact, normalized."""
    fork = torch.version.fork
    out = []
    for record in records:
        message = record.getMessage()
        if record.name.endswith("__fusion") and message.startswith("fusion remarks"):
            message = message.replace(fork.revision, "<revision>")
            message = message.replace(fork.source_digest, "<digest>")
            # The release varies with the virtualenv (2.14.1 or 2.11.0).
            out.append(re.sub(r"torch \d+\.\d+\.\d+\S*", "torch <release>", message))
    return out


class TestForkOverlay(LoggingTestCase):
    def test_torch_is_the_fork(self) -> None:
        fork = torch.version.fork
        self.assertTrue(
            torch.__file__.startswith(fork.overlay + os.sep),
            f"torch imported from {torch.__file__}, not the overlay {fork.overlay}",
        )
        self.assertIn("torch/_inductor/scheduler.py", fork.patches)
        self.assertIn("torch/_inductor/fusion_remarks/hooks.py", fork.new_files)
        # The scheduler that runs is the patched copy, not the installed file.
        scheduler_file = torch._inductor.scheduler.__file__
        self.assertFalse(os.path.islink(scheduler_file))
        with open(scheduler_file) as f:
            hooked = "fusion_hooks.begin_fusion(self)" in f.read()
        self.assertTrue(hooked, f"{scheduler_file} does not call the fusion hook")
        if os.environ.get("FORK_REVISION"):
            # A tree copied without usable git refs (the GPU machine's copy)
            # is named by FORK_REVISION when the overlay is built.
            self.assertEqual(fork.revision, os.environ["FORK_REVISION"])
        else:
            self.assertRegex(fork.revision, r"^[0-9a-f]{12}(-dirty)?$")

    @make_logging_test(fusion=True)
    def test_fusion_log_names_fork_for_each_graph(self, records) -> None:
        # the header is detail: TORCH_LOGS=+fusion shows it, =fusion does not
        x = torch.randn(64)
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "fusion"}):
            torch.compile(sin_cos_with_graph_break, backend="inductor")(x)
        self.assertEqual(fusion_headers(records), [])
        torch._dynamo.reset()
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "+fusion"}):
            compiled = torch.compile(sin_cos_with_graph_break, backend="inductor")
            torch.testing.assert_close(compiled(x), sin_cos_with_graph_break(x))
        self.assertExpectedInline(
            "\n".join(fusion_headers(records)),
            """\
fusion remarks for graph 0/0 by torch <release> fusion-fork <revision> (sources <digest>): 1 scheduler nodes before fusion
fusion remarks for graph 1/0 by torch <release> fusion-fork <revision> (sources <digest>): 1 scheduler nodes before fusion""",
        )

    def test_hook_does_nothing_when_fusion_logging_is_off(self) -> None:
        torch._logging.set_logs()
        calls = []
        original = fusion_recorder.producer_identity
        fusion_recorder.producer_identity = lambda: calls.append(1) or original()
        self.addCleanup(setattr, fusion_recorder, "producer_identity", original)
        fusion_hooks.log_graph_header([])
        self.assertEqual(calls, [])
        torch._logging.set_logs(fusion=True)
        self.addCleanup(torch._logging.set_logs)
        fusion_hooks.log_graph_header([])
        self.assertEqual(calls, [1])

    def test_instrumentation_error_does_not_fail_compile(self) -> None:
        # Inject a fault into the hook: the compile goes on, one warning says so.
        torch._logging.set_logs(fusion=True)
        self.addCleanup(torch._logging.set_logs)
        self.addCleanup(setattr, fusion_recorder, "_reported_failure", False)

        def broken() -> str:
            raise RuntimeError("injected fault")

        original = fusion_recorder.producer_identity
        fusion_recorder.producer_identity = broken
        self.addCleanup(setattr, fusion_recorder, "producer_identity", original)
        torch._dynamo.reset()
        with (
            torch._inductor.config.patch(fx_graph_cache=False),
            self.assertLogs(fusion_recorder.log, level="WARNING") as captured,
        ):
            x = torch.randn(16)
            compiled = torch.compile(lambda t: torch.sin(t) * 3)
            torch.testing.assert_close(compiled(x), torch.sin(x) * 3)
        self.assertEqual(len(captured.records), 1)
        self.assertIn("compilation goes on", captured.records[0].getMessage())

    @make_logging_test(fusion=True)
    def test_fusion_log_on_gpu(self, records) -> None:
        if not HAS_GPU:
            self.skipTest("needs a GPU")
        x = torch.randn(1024, device=GPU_TYPE)
        compiled = torch.compile(sin_cos_with_graph_break)
        torch.testing.assert_close(compiled(x), sin_cos_with_graph_break(x))
        self.assertEqual(len(fusion_headers(records)), 2)


if __name__ == "__main__":
    run_tests()
