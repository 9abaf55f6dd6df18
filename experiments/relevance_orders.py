"""How far feature answers can take the test MSE, and how well the first ranking finds the
keywords that matter (issue 25: "40 answers do most of the work").

For each run of a real-data sweep with feature questions (``--questions both``, the relevance
model, tau2 by CV as the sweep chose it and chosen again as the sweep does), the simulated
expert's relevance answers are given in fixed orders and the test MSE is read after 10, 20 and
40 of them:

* ``relevant-first``: the expert's relevant keywords, largest |coefficient| first (an oracle:
  the most a relevance question can give);
* ``relevant-random``: the same keywords in a random order;
* ``ranking``: the utility's ranking at the start (the non-sequential strategy's order of
  feature questions).

Also per run: how many of the first 40 keywords of the start's ranking are relevant to the
expert, and the AUC of the ranking's scores for the expert's relevance.

Usage::

    python experiments/relevance_orders.py --dataset amazon [--runs 6] [--seed 3]
        [--corpus FILE --name kitchen] [--data-dir DIR]
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from elicit.cli.argtypes import OneLineParser, nonneg_int, positive_int
from elicit.data.sources import DATASETS, corpus_source
from elicit.errors import ElicitError
from elicit.harness.sweep import sweep_elicitor
from elicit.internal.threads import single_blas_thread
from elicit.paper.configs import RealDataConfig
from elicit.paper.real_problem import problem_from_run, run_cv_tau2, run_setup

AT = (10, 20, 40)


@single_blas_thread
def one_run(cfg: RealDataConfig, run: int) -> dict:
    rd, expert, cands = run_setup(cfg, run)
    problem = problem_from_run(rd, cfg, run, run_cv_tau2(cfg, run, rd, cands)[0], expert)
    coef = np.asarray(expert.coef_)
    relevant = np.flatnonzero(coef != 0)
    el = sweep_elicitor(problem, cfg.sweep_config())
    # the start's scores of every feature question (rows (k, NO_FEATURE), NO_FEATURE < 0)
    scores = el.score(el.open_questions().indices())
    feature = scores.questions[:, 1] < 0
    gain = np.full(el.base.p, -np.inf)
    gain[scores.questions[feature, 0]] = scores.utility[feature]
    ranking = np.argsort(-gain, kind="stable")
    rng = np.random.default_rng(run)
    orders = {"relevant-first": relevant[np.argsort(-np.abs(coef[relevant]), kind="stable")],
              "relevant-random": rng.permutation(relevant), "ranking": ranking}
    out: dict = {"start": problem.mse(el), "hits": int(np.isin(ranking[:40], relevant).sum()),
                 "auc": float(roc_auc_score(coef != 0, gain))}
    again = problem.tau2_again
    for name, order in orders.items():
        el.reset()
        curve = []
        for t, k in enumerate(order[:max(AT)], 1):
            el.answer(int(k), None, expert.relevance(int(k)))
            if again is not None:
                again.after(el, t)
            if t in AT:
                curve.append(problem.mse(el))
        out[name] = curve
    return out


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    # no default here: --dataset given beside --corpus is told apart from not given
    ap.add_argument("--dataset", default=None, choices=DATASETS, help="default: amazon")
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--name", default=None)
    ap.add_argument("--runs", type=positive_int, default=6)
    ap.add_argument("--seed", type=nonneg_int, default=3)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    if args.name is not None and args.corpus is None:
        ap.error("--name names a --corpus; give --corpus FILE")
    if args.dataset is not None and args.corpus is not None:
        ap.error("--dataset and --corpus are two data sets; give one")
    kw = dict(questions="both", meta_features="ppmi", meta_dim=10, seed=args.seed,
              runs=args.runs, engine="numpy", data_dir=args.data_dir)
    try:  # a missing corpus or data directory: one line, as the package's commands say it
        cfg = RealDataConfig(corpus_source(args.corpus, name=args.name) if args.corpus
                             else args.dataset or "amazon", **kw)
    except ElicitError as e:
        ap.error(str(e))
    res = [one_run(cfg, r) for r in range(args.runs)]
    print(f"{cfg.name}, {args.runs} runs, seed {args.seed}: test MSE (mean over runs) after "
          f"{', '.join(map(str, AT))} relevance answers in a fixed order")
    print(f"  start (no answer): {np.mean([r['start'] for r in res]):.3f}")
    for name in ("relevant-first", "relevant-random", "ranking"):
        m = np.mean([r[name] for r in res], axis=0)
        print(f"  {name:16s} " + " / ".join(f"{v:.3f}" for v in m))
    print(f"  relevant among the start ranking's first 40: "
          f"{np.mean([r['hits'] for r in res]):.1f} (runs: {[r['hits'] for r in res]}); "
          f"AUC of its gains for relevance {np.mean([r['auc'] for r in res]):.3f}")


if __name__ == "__main__":
    main()
