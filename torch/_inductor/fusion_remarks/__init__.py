"""Fusion remarks: why Inductor put two ops in one kernel, or in two.

A *remark* records one fusion decision or one kernel boundary, in the manner
of LLVM's optimization remarks (``DESIGN.md`` sections 3 and 3a).  The package
is layered; each module has one job and imports only the ones above it here:

``taxonomy``
    the reason codes, their categories and meanings (one table; the JSON
    Schema's enum and the docs table are generated from it)
``model``
    typed records (remark, pair verdict, realization, boundary, kernel, graph
    report, graph break) with ``to_json``
``costs``
    what a missed fusion costs: a given cost model, each boundary's predicted
    gain, measured kernel times joined by name (no device is timed here: the
    fusion viewer measures it where the report is read)
``recorder``
    what is recorded for the graph being compiled, and whether anyone listens;
    features (the ablation switches) register the remarks they add to each
    graph here, so that the package imports no feature
``kernels``
    a generated graph's kernels and the ops each computes (an extern call's
    inputs and a layout copy's op told apart from what it computes)
``analysis``
    recorded data to a graph report (every boundary with one reason), no side effects
``summary``
    the text summary of a graph report (the ``fusion`` log, ``summary()``),
    from the report's JSON only
``sinks`` / ``graph_breaks``
    where reports go (captures, the ``fusion`` log, ``TORCH_TRACE``); Dynamo's breaks
``publish``
    a generated graph's records to its report: the analysis, then the sinks
``hooks``
    the only code upstream's patched files call, at the rules that decide;
    they only record, and hand a generated graph to ``publish``

``torch._inductor.fusion_report`` is the public face (``capture``, ``to_json``,
``summary``, ``validate``).  The pages, pictures, diffs, the
stored captures' loader, the device's measured cost model and the fusible
check (forcing one refused fusion through an ``InductorChoices`` subclass) are
the fusion viewer's (``packages/fusion_viewer``, ``python -m fusion_viewer``):
it reads the report's JSON and ``TORCH_TRACE``
directories, and no file of torch imports it.  This ``__init__`` imports nothing,
so that a patched upstream module importing :mod:`.hooks` loads only what the
hooks need: the taxonomy, the records (``model``, ``recorder``) and the hooks;
the hooks load ``publish`` (the analysis, the sinks) only when a compile is
recorded (``test_fusion_remarks_layers.py`` checks the module set).
"""
