"""The dashboard's inline stylesheet and its method notes (text only, no fonts fetched).

Layout: a 1360 px column; reviewer cards in a three-column grid at 1400 px (fewer on
narrow screens); plots two per row. Untrusted ids sit in ``<bdi class="id">``: isolated
from the surrounding text direction and allowed to wrap anywhere, so a long or bidi id
cannot push a card or table wider than its column.
"""

from __future__ import annotations

DASHBOARD_CSS = """
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       padding: 16px 20px 40px; max-width: 1400px; color: #1d232a; line-height: 1.4;
       background: #f3f5f7; font-size: 14px; }
h1 { font-size: 1.5em; margin: 0 0 4px; } h2 { font-size: 1.15em; margin: 0 0 10px; }
h3 { font-size: 1em; margin: 0 0 4px; }
.top .meta { color: #4a5561; margin: 0 0 12px; }
.panel { background: #fff; border: 1px solid #d9dee3; border-radius: 6px; padding: 14px 16px;
         margin: 0 0 14px; min-width: 0; overflow-x: auto; }
.id { unicode-bidi: isolate; overflow-wrap: anywhere; word-break: break-word; }
code .id { font-family: ui-monospace, monospace; }
.lead { font-size: 1.05em; margin: 0 0 8px; } .nothing { color: #1f6f43; font-weight: 600; }
.grid-table { border-collapse: collapse; width: 100%; table-layout: auto; }
.grid-table th, .grid-table td { text-align: left; padding: 4px 8px; border-bottom: 1px solid
       #e6e9ed; vertical-align: top; overflow-wrap: anywhere; }
.grid-table thead th { background: #f6f8fa; font-weight: 600; font-size: 0.92em; }
#findings-table tbody tr { background: #fff4e5; }
#findings-table td:first-child { font-weight: 600; max-width: 260px; }
.grid-table tbody th, .grid-table tbody td:first-child { min-width: 7.5em; }
.chips { margin: 0 0 8px; } .chip { display: inline-block; margin: 0 6px 4px 0;
        padding: 1px 9px; border-radius: 10px; background: #fde2cf; color: #9a3412;
        font-size: 0.9em; }
.untested { margin-top: 10px; color: #4a5561; font-size: 0.92em; }
.untested ul { margin: 4px 0 0; padding-left: 20px; columns: 2; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(400px, 1fr));
         gap: 12px; }
.card { border: 1px solid #d9dee3; border-radius: 6px; padding: 10px 12px; min-width: 0;
        background: #fbfcfd; }
.card h3 { display: flex; gap: 8px; align-items: baseline; justify-content: space-between; }
.card .meta { margin: 0 0 6px; color: #4a5561; font-size: 0.9em; }
.badge { font-size: 0.78em; font-weight: 600; padding: 1px 7px; border-radius: 9px;
         background: #e3f1e8; color: #1f6f43; white-space: nowrap; }
.badge.hot { background: #fde2cf; color: #9a3412; }
.facts { width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 0.92em; }
.facts th { width: 112px; text-align: left; font-weight: 600; color: #4a5561;
            vertical-align: top; padding: 3px 6px 3px 0; }
.facts td { padding: 3px 0; overflow-wrap: anywhere; }
.facts tr.flagged th { color: #9a3412; } .facts tr.flagged td { font-weight: 600; }
.facts tr.flagged th::before { content: "\\25B2 "; }
td.flagged { background: #fde2cf; font-weight: 600; } .muted { color: #8a96a3; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr));
         gap: 14px; margin: 0 0 14px; }
.plots .panel { margin: 0; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 14px; }
.families h2 { margin-top: 4px; }
figure { margin: 8px 0; } figcaption { font-size: 0.88em; color: #4a5561; max-width: 680px; }
svg { background: #fff; max-width: 100%; height: auto; }
figure svg { border: 1px solid #e6e9ed; }
svg .title { font-size: 13px; font-weight: 600; }
svg .label, svg .tick, svg .axis { font-size: 11px; }
svg .grid { stroke: #eef1f4; } svg .reference { stroke: #8a96a3; stroke-dasharray: 4 3; }
svg .interval { stroke: #2f6db3; stroke-width: 2.5; } svg circle.mark { fill: #163d6b; }
svg circle.point { fill: #2f6db3; fill-opacity: 0.35; }
svg .fit { stroke: #c2410c; stroke-width: 2.5; }
svg .frame { fill: none; stroke: #d9dee3; }
svg.spark, svg.strip { display: block; margin-top: 3px; }
svg .band { fill: #2f6db3; fill-opacity: 0.15; }
svg .spark-line { fill: none; stroke: #2f6db3; stroke-width: 1.6; }
svg .change { stroke: #c2410c; stroke-width: 1.5; stroke-dasharray: 3 2; }
svg .bar.up { fill: #c2410c; fill-opacity: 0.75; } svg .bar.down { fill: #2f6db3;
       fill-opacity: 0.75; }
svg .whisker { stroke: #1d232a; stroke-width: 1.2; }
.moved { font-size: 0.85em; font-weight: 600; } .moved.up { color: #1f6f43; }
.moved.down { color: #9a3412; }
.note { font-size: 0.88em; color: #4a5561; }
.warning { background: #fff4e5; border-left: 4px solid #c2410c; padding: 0.4em 0.8em; }
pre { background: #f6f8fa; padding: 1em; overflow-x: auto; font-size: 12px; }
details summary { cursor: pointer; font-weight: 600; margin-top: 8px; }
"""

#: what each number means and how sure a flag is (shown under "Method notes")
METHOD_NOTES = (
    "Findings: one multiplicity procedure over every test in the report (family-wise 5% by "
    "default: Holm across families weighted toward the primary ones, Holm within each, "
    "the council's two nested position tests by one min-p test; or "
    "--error-rate fdr); self-preference and length (longer scores higher) are tested "
    "one-sided; the dashboard "
    "adds no test of its own. Holm p-values in the sections are within one family, for "
    "reference.",
    "Every interval is 95% and clusters by session (a session is one unit, not its records).",
    "Leniency: mean paired deviation from the reference reviewers on the same answers; "
    "reference chosen by a Holm step-down at 5%; harsh/generous when a finding.",
    "Position: cluster-robust Wald test, per reviewer and council-wide, that the first "
    "and the last slot score like the others (with 2-3 slots: that every slot scores "
    "alike), flagged when a finding; trend = points per slot later (< 0: primacy).",
    "Length: pooled within-session correlation of ln(words) with score; verbosity per "
    "reviewer from the joint model (answer fixed effects), no flag of its own.",
    "Self-preference: the joint model's self-review term (t test, same df as its "
    "interval); flagged when a finding.",
    "Favouritism: reviewer x model effects beyond quality and leniency, flagged when a "
    "finding; a strong favour spills about -1/(k-1) of itself onto its row and column.",
    "Anchoring: correlation of the other judges' consensus on the earlier answers (minus on "
    "the rest) with the paired deviation, within slot; flagged when a finding; not identified "
    "with two answers a review.",
    "Drift: CUSUM on weekly means (sparkline: mean with +-1.96 se band), one test per "
    "(reviewer, quantity) series; flagged when a finding.",
    "Causal checks: within-reviewer, within-answer differences from live re-asks; their "
    "tests are one family of the report-wide procedure.",
    "False-positive rates and power of every flag on simulated councils are in "
    "docs/bias-report.md.",
)
