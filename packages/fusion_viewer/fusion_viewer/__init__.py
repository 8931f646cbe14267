"""The fusion viewer: pages, pictures and diffs of TorchInductor's fusion reports.

It renders what ``torch._inductor.fusion_report`` records, reading only the
report's JSON (``FusionCapture.to_json()``, whose JSON Schema is torch's
``fusion_report_schema.json``) and ``TORCH_TRACE`` directories, in the manner
of LLVM's opt-viewer, which lives apart from the compiler that writes the
remarks.  Installed with ``pip install ./packages/fusion_viewer`` from the
repository (``make develop`` does it); run as ``python -m fusion_viewer
render|diff|study``; a capture of this process becomes a page with
``fusion_viewer.page.save_html(rep, path)``.  Of torch the renderers read only the
reason table (``fusion_remarks.taxonomy``) and the formatters the ``fusion``
log shares with them (``fusion_remarks.summary``); torch never imports the
viewer.

The package is layered; each module imports only the ones above it here:

``common``
    small helpers the renderers share: escaping, byte counts, source
    locations and their anchors, ids of graphs, boundaries and kernels
``graphviz``
    the pictures of the graphs, laid out by Graphviz ``dot``
``source``
    the user's source annotated with remarks, the graph breaks, the
    generated code
``boundaries``
    the boundary table of a graph's page: a row per boundary, the columns
    that have data, no predicted gain where a library call is on one side
``diff``
    what fused or split between two captures, as text and as a page
``html``
    the self-contained page of a capture (with ``page.css``, ``page.js`` and
    ``guide.html`` beside it)
``store``
    saved captures read back: a capture's JSON file or a ``TORCH_TRACE``
    directory
``costs``
    the device's cost model, measured where a report is read, and the
    reports that await it priced
``check``
    the fusible check: force one refused fusion and measure it (policy,
    harness)
``study``
    the pages of a fusion study: its index and one page per case
``page``
    the page of a capture made in this process, priced on this machine
``cli`` / ``__main__``
    the command line: ``render``, ``diff`` and ``study``

This ``__init__`` imports nothing, so that ``import fusion_viewer.html`` loads
only the renderers.
"""
