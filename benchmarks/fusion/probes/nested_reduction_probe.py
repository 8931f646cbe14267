"""Which of torch 2.15.0's nested and staged reduction refusals fire on small programs?

A search for rule programs (test/inductor/fusion_rule_programs.py):
each candidate is compiled on CUDA under a fusion capture with
``config.triton.nested_reduction`` on and off, and the reason codes of its
report are printed, the nested/staged ones marked.

    python3 tools/fork.py run -- python3 benchmarks/fusion/probes/nested_reduction_probe.py [NAME...]

Writes $OUT/probe_nested.json (or /tmp).  PROBE_DEVICE=cpu runs it on the CPU,
where no nested rule applies (a smoke test of the script).
"""

import json
import os
import sys
import traceback

import torch
import torch.nn.functional as F
from torch._inductor import config, fusion_report

TARGETS = {
    "nested_reduction_append_failed",
    "nested_reduction_placement_mismatch",
    "sub_parent_epilogue_planning_failed",
    "sub_parent_epilogue_partial",
    "sub_parent_epilogue_invalid",
    "staged_dependency_unproven",
    "staged_reduction_plan_lost",
    "reduction_contracts_incompatible",
    "foreach_cross_dependency",
}

DEVICE = os.environ.get("PROBE_DEVICE", "cuda")
B, D, G = 64, 1024, 32


def ln_group_amax(x):
    y = F.layer_norm(x, (D,))
    a = y.view(B, D // G, G).abs().amax(-1)
    return y, a


def ln_group_quant(x):
    y = F.layer_norm(x, (D,))
    g = y.view(B, D // G, G)
    a = g.abs().amax(-1, keepdim=True)
    return (g / a).view(B, D), a


def ln_group_amax_then_rowsum(x):
    y = F.layer_norm(x, (D,))
    a = y.view(B, D // G, G).abs().amax(-1)
    return a, (y * a.repeat_interleave(G, 1)).sum(-1)


def ln_two_groups(x):
    y = F.layer_norm(x, (D,))
    a = y.view(B, D // G, G).abs().amax(-1)
    b = y.view(B, D // 64, 64).abs().amax(-1)
    return a, b


def ln_group_then_transposed(x):
    y = F.layer_norm(x, (D,))
    a = y.view(B, D // G, G).abs().amax(-1)
    return a, a.t().contiguous().sum(0)


def rms_group_amax(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y.view(B, D // 128, 128).abs().amax(-1)


def softmax_group_amax(x):
    p = torch.softmax(x, -1)
    return p.view(B, D // G, G).amax(-1)


def rms_pack_pairs(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    lo = (y[:, 0::2] * 7).round().clamp(-8, 7).to(torch.int8)
    hi = (y[:, 1::2] * 7).round().clamp(-8, 7).to(torch.int8)
    return lo + hi * 16


def rms_sum_pairs(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y[:, 0::2] + y[:, 1::2]


def softmax_sum_pairs(x):
    p = torch.softmax(x, -1)
    return p[:, 0::2] + p[:, 1::2]


def rms_sum_quads(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y[:, 0::4] + y[:, 1::4] + y[:, 2::4] + y[:, 3::4]


def rms_pairs_and_full(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y[:, 0::2] + y[:, 1::2], y * 2


def rms_pairs_plus_other(x, z):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y[:, 0::2] + y[:, 1::2] + z


def rms_pairs_plus_colsum(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    c = x.sum(0)  # another reduction over a different axis
    return y[:, 0::2] + y[:, 1::2] + c[0::2]


def rms_pairs_into_out(x, out):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    out.copy_(y[:, 0::2] + y[:, 1::2] + out)
    return out


def rms_pairs_mutating_read(x, out):
    s = x.pow(2).mean(-1, keepdim=True) + out.sum(-1, keepdim=True)
    y = x * torch.rsqrt(s.abs() + 1e-6)
    out.copy_(y[:, 0::2] + y[:, 1::2])
    return out


def rms_pairs_then_sum(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    p = y[:, 0::2] + y[:, 1::2]
    return p, p.sum(-1)


def rms_pairs_transposed(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (y[:, 0::2] + y[:, 1::2]).t().contiguous()


def rms_strided_pairs(x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y[:, : D // 2] + y[:, D // 2 :]


def ln_quant_pack(x):
    y = F.layer_norm(x, (D,))
    g = y.view(B, D // G, G)
    a = g.abs().amax(-1, keepdim=True)
    q = (g / a * 7).round().clamp(-8, 7).to(torch.int8).view(B, D)
    return q[:, 0::2] + q[:, 1::2] * 16, a


def ln_group_amax_train(x, w):
    y = F.layer_norm(x, (D,), w)
    a = y.view(B, D // G, G).abs().amax(-1)
    return a.sum() + y.sum()


def rms(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rms_pairs_of_transposed(xt):
    y = rms(xt.t())  # rows are strided: column-major storage
    return y[:, 0::2] + y[:, 1::2]


def rms_pairs_of_padded(xp):
    y = rms(xp[:, :D])  # rows start D + 1 elements apart
    return y[:, 0::2] + y[:, 1::2]


def rms_pairs_and_quads(x):
    y = rms(x)
    return y[:, 0::2] + y[:, 1::2], y[:, 0::4] + y[:, 3::4]


def rms_pairs_and_stat(x):
    s = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    y = x * s
    return y[:, 0::2] + y[:, 1::2], s.expand(B, D // 2) * 3


def rms_pairs_and_other_row(x, z):
    y = rms(x)
    return y[:, 0::2] + y[:, 1::2], (z * 2).sum(-1)


def rms_pairs_bf16_out(x):
    y = rms(x)
    return (y[:, 0::2] + y[:, 1::2]).to(torch.bfloat16)


def rms_pairs_int_index(x, idx):
    y = rms(x)
    return y[:, 0::2] + y[:, 1::2] + idx.float()


def ln_group_amax_and_pairs(x):
    y = F.layer_norm(x, (D,))
    a = y.view(B, D // G, G).abs().amax(-1)
    return a, y[:, 0::2] + y[:, 1::2]


def ln_group_amax_on_stream(x):
    y = F.layer_norm(x, (D,))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = y.view(B, D // G, G).abs().amax(-1)
    torch.cuda.current_stream().wait_stream(s)
    return a


def rms_pairs_then_cumsum(x):
    y = rms(x)
    p = y[:, 0::2] + y[:, 1::2]
    return p, p.cumsum(-1)


def rms_pairs_mxfp6(x):
    y = rms(x).view(B, D // 4, 4)
    return torch.stack(
        [y[..., 0] + y[..., 1], y[..., 1] + y[..., 2], y[..., 2] + y[..., 3]], -1
    ).view(B, -1)


def softmax_pairs_with_mask(x, m):
    p = torch.softmax(x, -1)
    return torch.where(m[:, 0::2], p[:, 0::2], p[:, 1::2])


PROGRAMS = {
    "ln_group_amax": (ln_group_amax, lambda: (torch.randn(B, D),)),
    "ln_group_quant": (ln_group_quant, lambda: (torch.randn(B, D),)),
    "ln_group_amax_then_rowsum": (
        ln_group_amax_then_rowsum,
        lambda: (torch.randn(B, D),),
    ),
    "ln_two_groups": (ln_two_groups, lambda: (torch.randn(B, D),)),
    "ln_group_then_transposed": (
        ln_group_then_transposed,
        lambda: (torch.randn(B, D),),
    ),
    "rms_group_amax": (rms_group_amax, lambda: (torch.randn(B, D),)),
    "softmax_group_amax": (softmax_group_amax, lambda: (torch.randn(B, D),)),
    "rms_pack_pairs": (rms_pack_pairs, lambda: (torch.randn(B, D),)),
    "rms_sum_pairs": (rms_sum_pairs, lambda: (torch.randn(B, D),)),
    "softmax_sum_pairs": (softmax_sum_pairs, lambda: (torch.randn(B, D),)),
    "rms_sum_quads": (rms_sum_quads, lambda: (torch.randn(B, D),)),
    "rms_pairs_and_full": (rms_pairs_and_full, lambda: (torch.randn(B, D),)),
    "rms_pairs_plus_other": (
        rms_pairs_plus_other,
        lambda: (torch.randn(B, D), torch.randn(B, D // 2)),
    ),
    "rms_pairs_plus_colsum": (rms_pairs_plus_colsum, lambda: (torch.randn(B, D),)),
    "rms_pairs_into_out": (
        rms_pairs_into_out,
        lambda: (torch.randn(B, D), torch.randn(B, D // 2)),
    ),
    "rms_pairs_mutating_read": (
        rms_pairs_mutating_read,
        lambda: (torch.randn(B, D), torch.randn(B, D // 2)),
    ),
    "rms_pairs_then_sum": (rms_pairs_then_sum, lambda: (torch.randn(B, D),)),
    "rms_pairs_transposed": (rms_pairs_transposed, lambda: (torch.randn(B, D),)),
    "rms_strided_pairs": (rms_strided_pairs, lambda: (torch.randn(B, D),)),
    "ln_quant_pack": (ln_quant_pack, lambda: (torch.randn(B, D),)),
    "ln_group_amax_train": (
        ln_group_amax_train,
        lambda: (
            torch.randn(B, D, requires_grad=True),
            torch.randn(D, requires_grad=True),
        ),
    ),
    "rms_pairs_of_transposed": (rms_pairs_of_transposed, lambda: (torch.randn(D, B),)),
    "rms_pairs_of_padded": (rms_pairs_of_padded, lambda: (torch.randn(B, D + 1),)),
    "rms_pairs_and_quads": (rms_pairs_and_quads, lambda: (torch.randn(B, D),)),
    "rms_pairs_and_stat": (rms_pairs_and_stat, lambda: (torch.randn(B, D),)),
    "rms_pairs_and_other_row": (
        rms_pairs_and_other_row,
        lambda: (torch.randn(B, D), torch.randn(B, D)),
    ),
    "rms_pairs_bf16_out": (rms_pairs_bf16_out, lambda: (torch.randn(B, D),)),
    "rms_pairs_int_index": (
        rms_pairs_int_index,
        lambda: (torch.randn(B, D), torch.randint(0, 9, (B, D // 2))),
    ),
    "ln_group_amax_and_pairs": (ln_group_amax_and_pairs, lambda: (torch.randn(B, D),)),
    "ln_group_amax_on_stream": (ln_group_amax_on_stream, lambda: (torch.randn(B, D),)),
    "rms_pairs_then_cumsum": (rms_pairs_then_cumsum, lambda: (torch.randn(B, D),)),
    "rms_pairs_mxfp6": (rms_pairs_mxfp6, lambda: (torch.randn(B, D),)),
    "softmax_pairs_with_mask": (
        softmax_pairs_with_mask,
        lambda: (torch.randn(B, D), torch.rand(B, D) > 0.5),
    ),
}


def codes(data):
    found = {}
    for g in data["graphs"]:
        for key in ("boundaries", "evaluated_pairs", "remarks"):
            for e in g[key]:
                r = e.get("reason") or "none"
                found.setdefault(r, 0)
                found[r] += 1
    return found


def main():
    out = {}
    only = sys.argv[1:] or list(PROGRAMS)
    for name in only:
        fn, inputs = PROGRAMS[name]
        torch.manual_seed(0)
        args = [a.to(DEVICE).detach().requires_grad_(a.requires_grad) for a in inputs()]
        for nested in (True, False):
            torch._dynamo.reset()
            try:
                with config.patch({"triton.nested_reduction": nested}):
                    with fusion_report.capture() as rep:
                        torch.compile(fn)(
                            *[
                                a.clone().detach().requires_grad_(a.requires_grad)
                                if a.requires_grad
                                else a.clone()
                                for a in args
                            ]
                        )
                data = rep.to_json()
                c = codes(data)
                kernels = sum(len(g.get("kernels", [])) for g in data["graphs"])
                out[f"{name} nested={nested}"] = {"codes": c, "kernels": kernels}
                hits = sorted(set(c) & TARGETS)
                print(
                    f"{name:28s} nested={nested!s:5s} kernels={kernels:3d} targets={hits} all={sorted(c)}",
                    flush=True,
                )
            except Exception as e:
                out[f"{name} nested={nested}"] = {"error": repr(e)[:300]}
                print(f"{name:28s} nested={nested} ERROR {e!r}"[:300], flush=True)
                traceback.print_exc()
    import os

    with open(
        os.path.join(os.environ.get("OUT", "/tmp"), "probe_nested.json"), "w"
    ) as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
