"""``label-plan`` over a pairs file: the plan and the labelling order, as one JSON document.

The document (``llm-council-label-order/1``) is what ``label-ui --order`` reads: its
``order`` lists the unlabelled pair ids, the first to label first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llm_council.calibration.label_plan import (
    CATEGORIES,
    Plan,
    order_pairs,
    pair_priority,
    plan_agreement,
    plan_kappa,
)
from llm_council.calibration.outcomes import PairOutcome, judgments_to_outcome
from llm_council.calibration.pairs import Pair
from llm_council.errors import ConfigError, InputError
from llm_council.infra.input_files import load_input_json
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.reliability.agreement import cohen_kappa

ORDER_FORMAT = "llm-council-label-order/1"
CAVEAT = (
    "pairs ordered most informative first are harder than the file as a whole: the "
    "agreement measured on them describes that set, and the plan ignores earlier labels "
    "(worst case); use --order random for a random sample planned from the labels"
)


def _group(pairs: Sequence[Pair], path: str) -> dict[str, list[Pair]]:
    grouped: dict[str, list[Pair]] = {}
    for pair in pairs:
        grouped.setdefault(pair.pair_id, []).append(pair)
    for pair_id, records in grouped.items():
        labels = {r.human_label for r in records if r.human_label is not None}
        if len(labels) > 1:
            raise InputError(
                f"pair {pair_id!r}: records disagree on 'human_label' ({sorted(labels)})",
                path=path,
                line=records[-1].line or None,
            )
    return grouped


def _metric_judge(pairs: Sequence[Pair], judge: str | None, path: str) -> str | None:
    judges = sorted({p.judge for p in pairs if p.judge is not None and p.judgments})
    if judge is not None:
        if judge not in judges:
            found = ", ".join(repr(j) for j in judges) or "none"
            raise InputError(f"judge {judge!r} not in the records; found: {found}", path=path)
        return judge
    if len(judges) > 1:
        raise ConfigError(
            f"{path}: several judges ({', '.join(repr(j) for j in judges)}): "
            "pass --judge NAME to plan for one"
        )
    if judges:
        return judges[0]
    anonymous = any(p.judgments for p in pairs)
    return "" if anonymous else None  # "" = verdicts recorded without a judge name


def _current(
    metric: str, verdicts: list[str], humans: list[str], confidence: float
) -> dict[str, Any]:
    n = len(humans)
    if metric == "agreement":
        correct = sum(v == h for v, h in zip(verdicts, humans, strict=True))
        if not n:
            return {"n": 0, "estimate": None, "halfwidth": None}
        low, high = wilson_interval(correct, n, confidence)
        return {"n": n, "estimate": correct / n, "halfwidth": (high - low) / 2}
    result = cohen_kappa(verdicts, humans, CATEGORIES, confidence)
    finite = n >= 2 and result.standard_error == result.standard_error
    return {
        "n": n,
        "estimate": result.kappa if result.kappa == result.kappa else None,
        "halfwidth": (result.ci_high - result.ci_low) / 2 if finite else None,
    }


def plan_document(
    pairs: Sequence[Pair],
    *,
    path: str,
    metric: str,
    halfwidth: float,
    confidence: float = 0.95,
    judge: str | None = None,
    order: str = "informative",
    seed: int = 0,
) -> dict[str, Any]:
    """The plan for ``metric`` and the order of the unlabelled pairs."""
    grouped = _group(pairs, path)
    metric_judge = _metric_judge(pairs, judge, path)
    outcomes: dict[str, list[PairOutcome]] = {
        pair_id: [judgments_to_outcome(r, r.judgments) for r in records if r.judgments]
        for pair_id, records in grouped.items()
    }
    label = {
        pid: next((r.human_label for r in rs if r.human_label), None) for pid, rs in grouped.items()
    }
    judge_verdict: dict[str, str] = {}
    for pair_id, records in grouped.items():
        for record in records:
            if record.judgments and (metric_judge in (None, "") or record.judge == metric_judge):
                outcome = judgments_to_outcome(record, record.judgments)
                if outcome.evaluated:
                    judge_verdict[pair_id] = outcome.consolidated
    scored = [pid for pid in grouped if label[pid] is not None and pid in judge_verdict]
    verdicts = [judge_verdict[pid] for pid in scored]
    humans = [str(label[pid]) for pid in scored]
    plan: Plan
    use_labels = order == "random"
    if metric == "agreement":
        plan = plan_agreement(
            halfwidth,
            confidence,
            len(scored),
            sum(v == h for v, h in zip(verdicts, humans, strict=True)),
            use_labels=use_labels,
        )
    elif metric == "kappa":
        shares = [sum(v == c for v in judge_verdict.values()) for c in CATEGORIES]
        plan = plan_kappa(
            halfwidth,
            confidence,
            verdicts,
            humans,
            [float(s) for s in shares],
            seed,
            use_labels=use_labels,
        )
    else:
        raise ConfigError(f"unknown metric '{metric}'; known: agreement, kappa")
    unlabelled = [pid for pid in grouped if label[pid] is None]
    ranked = order_pairs([pair_priority(pid, outcomes[pid]) for pid in unlabelled], order, seed)
    return {
        "format": ORDER_FORMAT,
        "source": path,
        "metric": metric,
        "judge": metric_judge or None,
        "target_halfwidth": halfwidth,
        "confidence": confidence,
        "labelled_pairs": len([pid for pid in grouped if label[pid] is not None]),
        "labelled_and_judged": len(scored),
        "current": _current(metric, verdicts, humans, confidence),
        "total_needed": plan.total_needed,
        "more_needed": plan.more_needed,
        "unlabelled_pairs": len(unlabelled),
        "reachable": plan.more_needed <= len(unlabelled),
        "planning_basis": plan.basis,
        "planning_value": plan.planning_value,
        "order_kind": order,
        "caveat": CAVEAT if order == "informative" else None,
        "order": [
            {
                "id": p.pair_id,
                "score": p.score,
                "flip_share": p.flip_share,
                "disagreement": p.disagreement,
                "judges": p.judges,
            }
            for p in ranked
        ],
    }


def read_label_order(path: Path) -> list[str]:
    """The pair ids of an order file, first to label first."""
    document = load_input_json(path)  # regular, bounded, not nested too deeply: one line
    if not isinstance(document, dict) or document.get("format") != ORDER_FORMAT:
        raise InputError(f"not a label order: 'format' must be '{ORDER_FORMAT}'", path=str(path))
    entries = document.get("order")
    if not isinstance(entries, list):
        raise InputError("field 'order' must be a list", path=str(path))
    ids = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise InputError(f"order[{position}]: field 'id' must be a string", path=str(path))
        ids.append(entry["id"])
    return ids


def apply_label_order(pairs: Sequence[Pair], order_ids: Sequence[str], path: str) -> list[Pair]:
    """``pairs`` with the ordered ids first, in that order, then the rest as they were."""
    known = {pair.pair_id for pair in pairs}
    missing = [pair_id for pair_id in order_ids if pair_id not in known]
    if missing:
        raise InputError(
            f"order names pair {missing[0]!r}, which is not in the pairs file "
            f"({len(missing)} such ids): was it made from another file?",
            path=path,
        )
    rank = {pair_id: i for i, pair_id in enumerate(dict.fromkeys(order_ids))}
    return sorted(pairs, key=lambda p: rank.get(p.pair_id, len(rank)))


def render_plan(document: dict[str, Any], order_path: str) -> str:
    """The plan as a few plain lines (ids and judge names escaped by the caller)."""
    current = document["current"]
    now = (
        f"{current['estimate']:.3f}, half-width {current['halfwidth']:.3f}"
        if current["estimate"] is not None and current["halfwidth"] is not None
        else "no interval yet"
    )
    lines = [
        f"label plan: {document['metric']} of judge {document['judge'] or '(none recorded)'} vs "
        f"humans, target half-width {document['target_halfwidth']:g} at "
        f"{document['confidence']:.0%}",
        f"  labelled and judged now: {document['labelled_and_judged']} ({now})"
        + (
            f"; {unjudged} labelled pairs have no verdict from this judge and do not count"
            if (unjudged := document["labelled_pairs"] - document["labelled_and_judged"])
            else ""
        ),
        f"  planning: {document['planning_basis']}",
        f"  labels needed in total: {document['total_needed']}; "
        f"label {document['more_needed']} more",
    ]
    if not document["reachable"]:
        lines.append(
            f"  only {document['unlabelled_pairs']} unlabelled pairs in the file: the target "
            "is out of reach without more pairs"
        )
    lines.append(
        f"  wrote the order of {document['unlabelled_pairs']} unlabelled pairs "
        f"({document['order_kind']}) to {order_path}; label-ui --order shows them in it"
    )
    if document["caveat"]:
        lines.append(f"  note: {document['caveat']}")
    return "\n".join(lines)
