"""What the FX fusion arm's generated Triton kernels import at run time.

Each generated kernel module (written by :mod:`.codegen_triton`) starts with
``from fx_fusion.triton_support import triton_libdevice``.  These helpers
live below the generator, not in it, so that a generated module never
imports the module that generated and loaded it (the generator imports them
too, for :func:`triton_interpreting`).
"""

from __future__ import annotations

import functools
import os
import types
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Callable


def _np_elementwise(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A numpy stand-in for a libdevice function under the Triton interpreter."""

    def call(*args: Any) -> Any:
        import numpy as np
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        datas = [arg.handle.data for arg in args]
        with np.errstate(all="ignore"):
            data = np.asarray(fn(*datas), dtype=datas[0].dtype)
        dtype = args[0].dtype
        if any(arg.type.is_block() for arg in args):
            ty = tl.block_type(dtype, list(data.shape))
        else:
            ty = dtype
        return tl.tensor(TensorHandle(np.ascontiguousarray(data), dtype), ty)

    return call


def triton_interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET``).

    The variable is Triton's, so it is read as Triton reads it (which takes
    "true" and "on" too), not by the fork's switch parser.
    """
    try:
        from triton import knobs
    except ImportError:
        return os.environ.get("TRITON_INTERPRET", "0") == "1"
    return bool(knobs.runtime.interpret)


@functools.cache
def triton_libdevice() -> Any:
    """The ``libdevice`` the generated Triton kernels call.

    Triton's interpreter (``TRITON_INTERPRET=1``) cannot run libdevice
    functions, so there the few the kernels use (``expm1``, ``log1p``,
    ``tan``, ``tanh``, ``atan2``, ``pow``, ``nearbyint``) are numpy
    stand-ins; on a GPU this is ``triton.language.extra.libdevice``.
    """
    if not triton_interpreting():
        from triton.language.extra import libdevice

        return libdevice
    import numpy as np

    return types.SimpleNamespace(
        expm1=_np_elementwise(np.expm1),
        log1p=_np_elementwise(np.log1p),
        tan=_np_elementwise(np.tan),
        tanh=_np_elementwise(np.tanh),
        atan2=_np_elementwise(np.arctan2),
        pow=_np_elementwise(np.power),
        nearbyint=_np_elementwise(np.rint),
    )
