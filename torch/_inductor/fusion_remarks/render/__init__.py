"""Renderers of a fusion report: each reads only the report's JSON.

The JSON is what ``FusionCapture.to_json()`` returns (see
``torch/_inductor/fusion_report_schema.json``); no renderer imports the
compiler, so pages can be rendered later from saved files.

* :mod:`.html`: the self-contained HTML page (``save_html``, ``render_html``):
  header, legend, reason tables, graph breaks, boundary tables;
* :mod:`.graphviz`: the pictures of the graphs, laid out by Graphviz ``dot``;
* :mod:`.source`: the annotated user source, in the manner of opt-viewer;
* :mod:`.common`: small helpers the three share;
* :mod:`.text`: the per-graph text summary the ``fusion`` log prints;
* :mod:`.diff`: what fused or split between two captures, as text and a page
  (``python -m torch._inductor.fusion_report diff``).
"""
