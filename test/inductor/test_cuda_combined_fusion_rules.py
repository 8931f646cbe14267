# Owner(s): ["module: inductor"]
"""The template rules of ``CUDACombinedScheduling`` give their reason codes.

``codegen/cuda_combined_scheduling.py`` refuses pairs with a bare ``return
False`` where a CUTLASS, CuteDSL, FlyDSL or NVIDIA universal GEMM (NVGEMM)
template is involved.  No machine this project runs on has those template
backends (the CUTLASS Python DSL, ROCm), so no program makes these rules fire
(``fusion_rule_programs.UNTESTED``).  These tests drive the real
``CUDACombinedScheduling`` instead, with test subclasses of its delegate
schedulings that claim every node as their template, and check that each
refusal reaches the pair under evaluation with its code; with the claim
withdrawn, the code is gone.
"""

from __future__ import annotations

import types
import unittest

from torch._inductor import fusion_report
from torch._inductor.codegen.cuda_combined_scheduling import CUDACombinedScheduling
from torch._inductor.codegen.cutedsl.cutedsl_scheduling import CuteDSLScheduling
from torch._inductor.codegen.cutlass.scheduling import CUTLASSScheduling
from torch._inductor.codegen.nv_universal_gemm.nv_universal_gemm_scheduling import (
    NVUniversalGemmScheduling,
)
from torch._inductor.fusion_remarks import (
    analysis,
    recorder as rec,
    releases as fusion_releases,
)
from torch._inductor.fusion_remarks.taxonomy import Reason
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.virtualized import V


NEW_IN_2_15_0 = fusion_releases.release_at_least("2.15.0")


class _NoTemplate:
    """A node no template backend claims (the delegates' checks are
    ``isinstance`` tests, so any object that is not a scheduler node works)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name

    def get_nodes(self) -> list[object]:
        return []  # no computed buffer, so no boolean output


class _CuteDSLEverywhere(CuteDSLScheduling):
    @staticmethod
    def is_cutedsl_template(node: object) -> bool:
        return True


class _CUTLASSEverywhere(CUTLASSScheduling):
    @staticmethod
    def is_cutlass_template(node: object) -> bool:
        return True

    def can_fuse_vertical(self, node1: object, node2: object) -> bool:
        return False


class _NVGemmEverywhere(NVUniversalGemmScheduling):
    """Every node is an NVGEMM template whose epilogue rules reject its consumer."""

    def is_nv_universal_gemm_template(self, node: object) -> bool:
        return True

    def vertical_fusion_decision(self, node1: object, node2: object) -> object:
        from torch._inductor.codegen.nv_universal_gemm import (
            nv_universal_gemm_scheduling as nvgemm,
        )

        return nvgemm.NVGemmVerticalFusionDecision.REJECT

    def can_fuse_vertical(self, node1: object, node2: object) -> bool:
        return False

    def has_nvgemm_bool_output(self, node: object) -> bool:
        return True


class TestCUDACombinedRules(TestCase):
    def refusals(self, decide: str, **delegates: object) -> tuple[bool, list]:
        """Run ``CUDACombinedScheduling.<decide>`` on two nodes as the outermost
        pair under evaluation; return its verdict and the refusals recorded."""
        scheduling = CUDACombinedScheduling(None)
        for attribute, delegate in delegates.items():
            setattr(scheduling, attribute, delegate)
        node1, node2 = _NoTemplate("buf0"), _NoTemplate("buf1")
        graph = types.SimpleNamespace()
        with fusion_report.capture(), V.set_graph_handler(graph):
            recorder = rec.current_recorder()
            assert recorder is not None
            evaluation = rec.Evaluation(node1, node2)
            recorder.evaluations.append(evaluation)
            try:
                verdict = getattr(scheduling, decide)(node1, node2)
            finally:
                recorder.evaluations.pop()
        return verdict, evaluation.refusals

    def assert_refused(self, decide: str, code: Reason, **delegates: object) -> str:
        verdict, refusals = self.refusals(decide, **delegates)
        self.assertFalse(verdict)
        self.assertEqual([r.code for r in refusals], [code])
        return analysis.refusal_detail(refusals[0])

    def test_cutedsl_template_takes_no_epilogue(self) -> None:
        detail = self.assert_refused(
            "can_fuse_vertical",
            Reason.TEMPLATE_BACKEND_UNFUSABLE,
            _cutedsl_scheduling=_CuteDSLEverywhere(None),
        )
        self.assertIn("CuteDSL", detail)

    def test_cutlass_template_without_evt_epilogue(self) -> None:
        detail = self.assert_refused(
            "can_fuse_vertical",
            Reason.TEMPLATE_BACKEND_UNFUSABLE,
            _cutlass_scheduling=_CUTLASSEverywhere(None),
        )
        self.assertIn("CUTLASS", detail)

    def test_template_backends_take_no_horizontal_partner(self) -> None:
        detail = self.assert_refused(
            "can_fuse_horizontal",
            Reason.TEMPLATE_BACKEND_UNFUSABLE,
            _cutedsl_scheduling=_CuteDSLEverywhere(None),
        )
        self.assertIn("CuteDSLScheduling.can_fuse_horizontal", detail)

    def test_nvgemm_epilogue_rejected(self) -> None:
        nvgemm = _NVGemmEverywhere(None)
        detail = self.assert_refused(
            "can_fuse_vertical",
            Reason.NVGEMM_EPILOGUE_REJECTED,
            _nv_universal_gemm_scheduling=nvgemm,
        )
        if NEW_IN_2_15_0:
            self.assertIn("REJECT", detail)

    @unittest.skipUnless(NEW_IN_2_15_0, "the boolean-output rule is new in 2.15.0")
    def test_nvgemm_bool_output(self) -> None:
        self.assert_refused(
            "can_fuse_horizontal",
            Reason.NVGEMM_BOOL_OUTPUT,
            _nv_universal_gemm_scheduling=_NVGemmEverywhere(None),
        )

    @unittest.skipUnless(NEW_IN_2_15_0, "FlyDSL templates are new in 2.15.0")
    def test_flydsl_template_takes_nothing(self) -> None:
        from torch._inductor.codegen.flydsl.flydsl_scheduling import (
            FlyDSLScheduling,
        )

        class FlyDSLEverywhere(FlyDSLScheduling):
            @staticmethod
            def is_flydsl_template(node: object) -> bool:
                return True

        for decide, fragment in (
            ("can_fuse_vertical", "FlyDSL templates"),
            ("can_fuse_horizontal", "FlyDSLScheduling.can_fuse_horizontal"),
        ):
            with self.subTest(decide):
                detail = self.assert_refused(
                    decide,
                    Reason.TEMPLATE_BACKEND_UNFUSABLE,
                    _flydsl_scheduling=FlyDSLEverywhere(None),
                )
                self.assertIn(fragment, detail)

    def test_no_template_no_template_code(self) -> None:
        """With no template claimed, the pair goes to the Triton scheduling,
        and none of these codes is recorded."""
        template_codes = {
            Reason.TEMPLATE_BACKEND_UNFUSABLE,
            Reason.NVGEMM_EPILOGUE_REJECTED,
            Reason.NVGEMM_BOOL_OUTPUT,
        }
        triton = types.SimpleNamespace(
            can_fuse_vertical=lambda n1, n2: False,
            can_fuse_horizontal=lambda n1, n2: False,
        )
        for decide in ("can_fuse_vertical", "can_fuse_horizontal"):
            with self.subTest(decide):
                verdict, refusals = self.refusals(decide, _triton_scheduling=triton)
                self.assertFalse(verdict)
                self.assertFalse({r.code for r in refusals} & template_codes)


if __name__ == "__main__":
    run_tests()
