"""The report's section on the configurations beyond the paper (``--recommended``): each
such sweep set beside the default sweep of its data set, and its start beside the start
without the expert's judgeable set J."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from elicit.data.sources import DATASETS
from elicit.harness.labels import LABELS, REFERENCE_LABELS
from elicit.paper.configs import RECOMMENDED
from elicit.report.realdata import Sweep, default_sweep, fmt, paired, sweep_section

BEYOND_DOC = Path("docs") / "beyond-the-paper.md"


def _doc_link(out: Path, doc: Path) -> str:
    """A link to ``doc`` from ``out``: relative inside the checkout, else absolute."""
    repo = Path(__file__).resolve().parents[2]
    out = Path(out).resolve()
    target = repo / doc
    link = Path(os.path.relpath(target, out)) if out.is_relative_to(repo) else target
    return f"[{doc.as_posix()}]({link.as_posix()})"


def versus_default(sweep: Sweep, default: Sweep) -> str:
    """One line setting ``sweep`` beside the default sweep of its data set: the no-feedback
    MSE, all answers given and Sequential − Random at the checkpoints both reach. Over the same
    seed (the same splits and experts), the first two also as a difference per run."""
    same = sweep.cfg.get("seed") == default.cfg.get("seed")
    parts = []
    for name, a, b in (("no-feedback MSE", sweep.initial(), default.initial()),
                       (REFERENCE_LABELS["ceiling"], sweep.per_run("ceiling"),
                        default.per_run("ceiling"))):
        if a is None or b is None:
            continue
        txt = f"{name} {fmt(a)} against {fmt(b)}"
        if same:
            txt += f" ({fmt((a - b.reindex(a.index)).dropna(), sign=True)} per run)"
        parts.append(txt)
    for t in sorted(set(sweep.checkpoints()) & set(default.checkpoints())):
        pa = paired(sweep, "sequential", "random", t)
        pb = paired(default, "sequential", "random", t)
        if pa is not None and pb is not None:
            parts.append(f"{LABELS['sequential']} − {LABELS['random']} per run after {t} "
                         f"answers {pa.text()} (lower in {pa.lower}/{pa.n} runs) against "
                         f"{pb.text()} ({pb.lower}/{pb.n})")
    return (f"Beside the default sweep (folder `{default.folder}`"
            + (", same seed: the same splits and experts" if same else ", another seed")
            + "), this sweep against the default: " + "; ".join(parts) + ".")


def beyond_section(sweeps: Sequence[Sweep], out: Path) -> list[str]:
    """The sweeps of the paper's data sets with other meta-features, model or utility target
    (the recommended configuration first), each beside the default sweep of its data set."""
    beyond = [s for s in sweeps if s.dataset in DATASETS and s.config_label and not s.mixed]
    if not beyond:
        return []
    rec = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in RECOMMENDED.items())
    lines = ["## Beyond the paper: the recommended configuration", "",
             f"The recommended configuration (`elicit realdata --recommended`: {rec}) is the "
             "best configuration found beyond the paper's model with pair questions only; "
             f"{_doc_link(out, BEYOND_DOC)} has the study. It is not free of expert input: "
             "known coupling couples only the set J of keywords the expert can judge (those "
             "of its answerable pairs, the pool of questions), which is the expert's "
             "relevance knowledge entering through the pool, so its start (0 answers) "
             "already uses it. Each sweep has the same table as the default sweeps, then a "
             "line that sets it beside the default sweep of its data set (mean ± s.e. over "
             "runs).", ""]
    for s in sorted(beyond, key=lambda s: not s.recommended):
        sec = sweep_section(s)
        if not s.recommended:
            sec[0] += " — not the recommended configuration"
        lines += sec
        if (d := default_sweep(sweeps, s.dataset)) is not None:
            lines += [versus_default(s, d), ""]
            if s.uses_judgeable_set:
                lines += [without_judgeable_set(s, d), ""]
    return lines


def without_judgeable_set(sweep: Sweep, default: Sweep) -> str:
    """One line: the start of a sweep whose model couples the expert's judgeable set J,
    beside the start with J = all features (the default sweep, if its meta-features match)."""
    a, b = sweep.initial(), default.initial()
    if sweep.meta_label != default.meta_label:
        return (f"Its start uses the expert's judgeable set J; the default sweep has other "
                f"meta-features ({default.meta_label}), so the start without J is not "
                "measured here.")
    txt = f"{fmt(a)} with J against {fmt(b)} with J = all features"
    if sweep.cfg.get("seed") == default.cfg.get("seed"):
        txt += f" ({fmt((a - b.reindex(a.index)).dropna(), sign=True)} per run)"
    return (f"Its start uses the expert's judgeable set J: {txt}, the default sweep (folder "
            f"`{default.folder}`, the same meta-features {sweep.meta_label}; known coupling "
            "with every feature coupled is the paper's model). The difference is what the "
            "expert's relevance knowledge is worth before any answer.")
