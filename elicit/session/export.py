"""What a session gives out (as ``Session`` methods and properties): its learned prior
(``docs/session.md``), its record as DataFrames, and the experts' :func:`agreement`."""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from elicit.elicitation.answers import DONT_KNOW
from elicit.errors import ElicitError
from elicit.internal.checks import check_bool
from elicit.internal.io import write_json_atomic, write_text_atomic
from elicit.model.covariance import IRRELEVANT_SCALE
from elicit.session import record, store
from elicit.session.opening import HISTORY_COLUMNS, SessionReader

if TYPE_CHECKING:
    from elicit.session.state import SessionState


def to_inferencedata(session: SessionState):
    """The current MAP as an :class:`arviz.InferenceData` (one chain with one draw: the MAP,
    not a sample; its groups and variables are listed in ``docs/session.md``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
        import arviz as az
    snap = session.snapshot(posterior=True, p_relevant=True)
    fit, post, active = snap.fit, snap.posterior, snap.answers
    assert post is not None
    names = session.feature_names
    constant = {"K": np.asarray(fit.K), "mu": np.asarray(post.mu)}
    coords = {"meta_feature": np.arange(session.U.shape[1]), "feature": names, "feature_": names}
    dims = {"gamma": ["meta_feature"], "K": ["feature", "feature_"], "mu": ["feature"]}
    if len(active):
        constant.update(
            answer_pair=np.array([[i, j] for _, i, j, _, _ in active],
                                 dtype=np.int64).reshape(-1, 2),
            answer=np.array([a for *_, a, _ in active], dtype=str),
            answer_expert=np.array([e for *_, e in active], dtype=str),
            answer_kind=np.array([k for k, *_ in active], dtype=str))
        coords.update(answer_index=np.arange(len(active)), pair_end=["i", "j"])
        dims.update(answer_pair=["answer_index", "pair_end"], answer=["answer_index"],
                    answer_expert=["answer_index"], answer_kind=["answer_index"])
    attrs = {"elicit_session": session.uid, "session_file": str(session.path),
             "data_hash": session.meta["data_hash"], "n_answers": len(active),
             "point_estimate": "MAP", "y_offset": session.y_offset,
             "standardized": int(session.meta.get("x_centre") is not None)}
    posterior = {"gamma": np.asarray(fit.gamma)[None, None, :],
                 "xi": np.array([[fit.xi]]), "tau2": np.array([[fit.tau2]])}
    if snap.relevance is not None:
        assert snap.p_relevant is not None and fit.zeta is not None
        posterior["zeta"] = np.array([[fit.zeta]])
        h = np.ones(len(names)) if fit.scales is None else np.asarray(fit.scales)
        constant.update(relevance_class=snap.relevance.astype(np.int64),
                        p_relevant=snap.p_relevant, prior_scale=h)
        dims.update(relevance_class=["feature"], p_relevant=["feature"], prior_scale=["feature"])
        attrs.update(questions=",".join(session.questions), irrelevant_scale=IRRELEVANT_SCALE)
    if snap.direction is not None:
        posterior["delta"] = np.array([[fit.delta]])
        constant["direction"] = snap.direction.astype(np.int64)
        dims["direction"] = ["feature"]
    idata = az.from_dict(posterior=posterior, constant_data=constant, coords=coords,
                         dims=dims, attrs=attrs)
    # from_dict puts attrs on its last group only; the MAP is what the posterior group holds.
    idata.posterior.attrs.update(attrs)
    for name, text in _DESCRIPTIONS.items():
        group = idata.posterior if name in ("zeta", "delta") else idata.constant_data
        if name in group:
            group[name].attrs["description"] = text
    return idata


#: The ``description`` of the netCDF export's relevance and direction-mean variables.
_DESCRIPTIONS = {
    "zeta": "MAP of zeta, the logit of the share of relevant features among those not judged; "
            "an unjudged feature j's prior variance scale is s_j + (1 - s_j) irrelevant_scale, "
            "s_j = s(zeta + 2 a_j), a_j the answers about j's neighbours in meta-feature space",
    "relevance_class": "the feature's class in the model: 1 relevant (answered so, or in an "
                       "answered pair), 0 irrelevant, -1 not judged (not asked, don't know, "
                       "or the experts disagree)",
    "p_relevant": "probability that the feature affects the outcome at the MAP: 1 or 0 for a "
                  "judged feature, else s(zeta + 2 a_j + log BF), BF = p(y | lambda = 1) / "
                  "p(y | lambda = irrelevant_scale)",
    "prior_scale": "h = sqrt(lambda) at the MAP: the prior covariance of beta is sigma2 tau2 "
                   "diag(h) K diag(h)",
    "delta": "MAP of delta >= 0: beta | sigma2 has the prior mean delta s (s: direction)",
    "direction": "s: 1 the answers say the feature raises the outcome, -1 lowers it, 0 not judged",
}


def prior_dict(session: SessionState) -> dict[str, Any]:
    """The learned prior as plain Python values (the JSON export format)."""
    snap = session.snapshot()
    fit, active = snap.fit, snap.answers
    names = session.feature_names
    return {
        "format": "elicit-prior", "format_version": 1,
        "session_uid": session.uid, "data_hash": session.meta["data_hash"],
        "feature_names": list(names),
        "gamma": [float(v) for v in fit.gamma], "xi": float(fit.xi),
        "tau2": float(fit.tau2), "K": np.asarray(fit.K).tolist(),
        "hyper": dataclasses.asdict(session.elicitor.hyper),
        "engine": session.elicitor.engine.name,
        "answers": [{"kind": k, "i": i, "j": j, "feature_i": names[i],
                     "feature_j": record.names_or_blank(names)[j], "answer": a, "expert": e}
                    for k, i, j, a, e in active],
        "y_offset": session.y_offset, "x_centre": session.meta.get("x_centre"),
        "x_scale": session.meta.get("x_scale"),
        "exported": store.now(),
        **({} if snap.relevance is None else {
            "questions": list(session.questions), "zeta": fit.zeta,
            "relevance_class": snap.relevance.astype(int).tolist(),
            "prior_scale": None if fit.scales is None else np.asarray(fit.scales).tolist()}),
        **({} if snap.direction is None else {
            "delta": fit.delta, "direction": snap.direction.astype(int).tolist()}),
    }


def export_prior(session: SessionState, path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Write the learned prior: ``.nc`` (:func:`to_inferencedata`) or ``.json``
    (:func:`prior_dict`); an existing file only with ``overwrite``.

    Raises
    ------
    ElicitError
        An unknown suffix, an existing file without ``overwrite``, a directory as ``path``, a
        missing or read-only directory, or no netCDF backend for ``.nc``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".nc", ".json"):
        raise ElicitError(f"cannot export to {path.name!r}: use a .nc (netCDF) or .json "
                          "file name")
    store.check_new_path(path, check_bool(overwrite, "overwrite"), what="the export")
    if suffix == ".json":
        return write_json_atomic(path, prior_dict(session), indent=1)
    idata = to_inferencedata(session)
    try:
        idata.to_netcdf(str(path))
    except (ImportError, ValueError) as e:
        raise ElicitError(f"cannot write netCDF ({e}); install h5netcdf or netCDF4, or "
                          "export to a .json file instead") from None
    return path


def history(session: SessionState) -> pd.DataFrame:
    """Every answer of every expert, oldest first, undone ones included (the columns
    :data:`~elicit.session.opening.HISTORY_COLUMNS`; a feature question: ``j = -1``,
    ``feature_j`` empty)."""
    return pd.DataFrame(session.history_rows(), columns=list(HISTORY_COLUMNS))


def queries(session: SessionState) -> pd.DataFrame:
    """Every query shown, with its kind and status (a question about one feature: ``j = -1``,
    ``feature_j`` empty)."""
    return pd.DataFrame(session._read(record.query_rows, session.feature_names),
                        columns=["query_id", "expert", "kind", "i", "j", "feature_i", "feature_j",
                                 "expected_gain", "exact_gain", "shown_at", "status", "batch"])


def events(session: SessionState) -> pd.DataFrame:
    """The append-only event log, read alone (a state's own ``_read`` would refit first)."""
    return pd.DataFrame(SessionReader._read(session, record.event_rows), columns=[
        "id", "kind", "expert", "query_id", "answer_id", "epoch", "at", "detail"])


def export_history(session: SessionState, path: str | os.PathLike,
                   overwrite: bool = False) -> Path:
    """Write :func:`history` as a CSV file (an existing one only with ``overwrite``)."""
    path = Path(path)
    store.check_new_path(path, check_bool(overwrite, "overwrite"), what="the export")
    return write_text_atomic(path, history(session).to_csv(index=False))


@dataclass(frozen=True)
class Agreement:
    """How the experts' active answers agree (:func:`agreement`).

    Attributes
    ----------
    pairs
        One row per question answered by at least two experts: kind, feature_i, feature_j,
        experts, the count of each answer word, conflict (two different answers other than
        don't know) and answers (``"alice: similar; bob: dissimilar"``); conflicts first.
    compared, agreeing
        Questions with at least two answers other than don't know; of those, the questions
        on which every such answer is the same.
    """

    pairs: pd.DataFrame
    compared: int
    agreeing: int

    @property
    def rate(self) -> float | None:
        """``agreeing / compared`` (None when no pair was compared)."""
        return self.agreeing / self.compared if self.compared else None


def agreement(session: SessionReader) -> Agreement:
    """Where the experts agree and disagree, over their active answers (every kind of
    question alike); the record alone, without the model (``elicit history --agreement``)."""
    names = record.names_or_blank(session.feature_names)
    counted = [a.value for k in session.kinds for a in k.answers] + [DONT_KNOW.value]
    by_question: dict[tuple[str, int, int], list[tuple[str, str]]] = {}
    for k, i, j, a, e in session._read(record.active_answers):
        by_question.setdefault((k, i, j), []).append((e, a))
    rows = []
    compared = agreeing = 0
    for (k, i, j), given in by_question.items():
        if len({e for e, _ in given}) < 2:
            continue
        kinds = [a for _, a in given]
        definite = {a for a in kinds if a != "dont_know"}
        if sum(a != "dont_know" for a in kinds) >= 2:
            compared += 1
            agreeing += len(definite) == 1
        rows.append({"kind": k, "feature_i": names[i], "feature_j": names[j],
                     "experts": len(given),
                     **{k: kinds.count(k) for k in counted},
                     "conflict": len(definite) > 1,
                     "answers": "; ".join(f"{record.expert_label(e).removeprefix('expert ')}: "
                                          f"{a.replace('_', ' ')}" for e, a in given)})
    cols = ["kind", "feature_i", "feature_j", "experts", *counted, "conflict", "answers"]
    df = pd.DataFrame(rows, columns=cols)
    if len(df):
        df = df.sort_values(["conflict", "experts"], ascending=False, kind="stable")
        df = df.reset_index(drop=True)
    return Agreement(df, compared, agreeing)
