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
    what a missed fusion costs: the device's cost model, each boundary's
    predicted gain, measured kernel times joined by name
``recorder``
    what is recorded for the graph being compiled, and whether anyone listens;
    features (the ablation switches) register the remarks they add to each
    graph here, so that the package imports no feature
``analysis``
    recorded data to a graph report (every boundary with one reason), no side effects
``render``
    text, HTML, Graphviz, annotated source and the diff of two captures, from
    the report's JSON only
``sinks`` / ``graph_breaks``
    where reports go (captures, the ``fusion`` log, ``TORCH_TRACE``); Dynamo's breaks
``hooks``
    the only code upstream's patched files call, at the rules that decide
``store``
    saved captures read back: a capture's JSON file or a ``TORCH_TRACE`` directory
``check``
    ``fusion_check``: force one refused fusion and measure it (policy, harness)
``cli``
    ``python -m torch._inductor.fusion_report``: ``render`` and ``diff``

``torch._inductor.fusion_report`` is the public face (``capture``, ``to_json``,
``summary``, ``save_html``, ``validate``).  This ``__init__`` imports nothing,
so that a patched upstream module importing :mod:`.hooks` loads only what the
hooks need: the taxonomy, the records (``model``, ``recorder``) and the hooks;
the hooks load ``analysis`` and ``sinks`` only when a compile is recorded
(``test_fusion_remarks_layers.py`` checks the module set).
"""
