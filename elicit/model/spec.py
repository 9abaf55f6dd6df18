"""The model: hyperparameters, the data of a fit, and the Stan data contract.

Notation follows Afrabandpey, Peltola & Kaski (IJCAI 2019): ``X`` (n x p) inputs, ``y`` (n,)
targets, ``U`` (p x d) meta-features (the kernel: :mod:`elicit.model.kernel`). ``stan/elicit.stan``
is the model's single specification; :func:`contract_data` and :func:`contract_params` list
the names a program of a model must declare."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal, cast

import numpy as np

from elicit.errors import ElicitError
from elicit.internal.cache import frozen
from elicit.internal.memory import memory_limit
from elicit.model.covariance import IRRELEVANT, RELEVANT, UNASKED, RelevanceScales, has_scales
from elicit.model.direction import LOWERS, RAISES, UNJUDGED, delta_prior_sd
from elicit.model.kernel import pair_weights
from elicit.model.layout import BLOCKS, ParamLayout, layout_of
from elicit.model.link import Link
from elicit.model.priors import GAMMA_MEAN, ZETA_PRIOR
from elicit.model.structure import may_be_structured, structure_of
from elicit.model.tall import is_tall
from elicit.model.variants import PAPER, ModelVariant, get_model

Variant = Literal["fixed", "learned"]

#: where a cold fit starts delta, relative to its prior sd (the Amazon and Yelp MAPs with
#: direction answers lie at 0.05-0.1 of it)
DELTA_START = 0.1


def contract_data(variant: str, model: str = PAPER) -> tuple[str, ...]:
    """Data names a Stan program of ``model`` and tau2 ``variant`` must declare."""
    m = get_model(model)
    return tuple(n for part in m.parts for n in part.required(m, variant == "learned"))


def contract_params(variant: str, model: str = PAPER) -> tuple[str, ...]:
    """Parameter names (theta's blocks' Stan names) a program of ``model`` must declare."""
    return tuple(BLOCKS[n].stan for n in get_model(model).params(variant == "learned"))


@dataclass(frozen=True)
class Hyper:
    """Hyperparameters of the model.

    Parameters
    ----------
    variant, tau2, a_tau, b_tau
        ``"fixed"``: tau^2 is data, ``tau2`` (the paper's real-data setting, 0.01);
        ``"learned"``: tau^2 ~ InvGamma(a_tau, b_tau) (the synthetic setting, 2 and 4).
    a_sigma, b_sigma
        Inverse-gamma prior of the noise variance (paper: 2 and 7).
    threshold_mean
        Prior mean m of the threshold xi ~ N+(m, m/2); ``"auto"``: the mean of gamma0 . w over
        the candidate pairs at the no-feedback MAP gamma0, as in the authors' code.
    model
        The named model (:data:`elicit.model.variants.MODELS`)."""

    variant: Variant = "fixed"
    a_sigma: float = 2.0
    b_sigma: float = 7.0
    tau2: float = 0.01
    a_tau: float = 2.0
    b_tau: float = 4.0
    threshold_mean: float | Literal["auto"] = "auto"
    model: str = PAPER

    def __post_init__(self) -> None:
        get_model(self.model)  # the one place a model name is checked
        if self.variant not in ("fixed", "learned"):
            raise ElicitError(f"variant must be 'fixed' or 'learned', got {self.variant!r}")
        for name in ("a_sigma", "b_sigma", "tau2", "a_tau", "b_tau", "threshold_mean"):
            v = getattr(self, name)
            if name == "threshold_mean" and isinstance(v, str) and v == "auto":
                continue
            number = isinstance(v, (int, float, np.integer, np.floating))
            if isinstance(v, bool) or not (number and np.isfinite(v) and v > 0):
                raise ElicitError(f"threshold_mean must be 'auto' or a positive number, got {v!r}"
                                  if name == "threshold_mean" else
                                  f"hyperparameter {name} must be a positive number, got {v!r}")
            object.__setattr__(self, name, float(v))  # a numpy scalar is no JSON number

    def with_threshold_mean(self, m: float) -> Hyper:
        """A copy with ``threshold_mean=float(m)`` (an ElicitError unless it is positive)."""
        return replace(self, threshold_mean=float(m))


@dataclass(frozen=True)
class Params:
    """A point in parameter space; ``tau2`` is the fixed value in the fixed variant, ``zeta``
    and ``delta`` ``None`` in a model without them."""

    gamma: np.ndarray
    xi: float
    tau2: float
    zeta: float | None = None
    delta: float | None = None


@dataclass
class ModelData:
    """Everything a fit needs: the regression data, the answers so far, the hyperparameters.

    ``pairs`` holds the (i, j) feature indices of the answered questions and ``f`` their answers
    (1 similar, 0 dissimilar). ``coupled``: the known-coupling models' coupled set J (a boolean
    mask, ``None``: all features); ``relevance``: one class per feature (1 relevant, 0
    irrelevant, -1 not judged; ``None``: all -1); ``direction``: one answer per feature (1
    raises, -1 lowers, 0 not known; ``None``: all 0). ``X``, ``y`` and ``U`` are held read-only,
    so that the caches can trust them."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    hyper: Hyper
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=int))
    f: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    coupled: np.ndarray | None = None
    relevance: np.ndarray | None = None
    direction: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.X, self.y, self.U = (frozen(a) for a in validate_regression(self.X, self.y, self.U))
        if self.hyper.a_sigma + self.n / 2 <= 1:  # sigma^2's posterior mean b*/(a* - 1)
            raise ElicitError(f"a_sigma must exceed {1 - self.n / 2:g} with {self.n} row(s): "
                              "the noise variance's posterior a* = a_sigma + n/2 must exceed 1")
        p = self.X.shape[1]
        self.pairs, self.f = check_answers(self.pairs, self.f, p)
        if self.hyper.threshold_mean == "auto":
            raise ElicitError("resolve threshold_mean='auto' before building ModelData "
                              "(elicit.prior.setup.fit_no_feedback does, by auto_threshold_mean)")
        if self.coupled is not None:
            self.coupled = _per_feature(self.coupled, p, (0, 1), bool, "coupled must be a "
                                        "boolean mask of the {p} features, got shape {shape}",
                                        kinds="bi")
        self.relevance = check_relevance(self.relevance, p)
        self.direction = check_direction(self.direction, p)
        if self.kernel_mask is not None or self.model.relevance:
            # a coupled set or feature scales keep the dense path (model.marginal.Marginal)
            check_size(self.n, p, self.d)

    @property
    def model(self) -> ModelVariant:
        """The model variant (:mod:`elicit.model.variants`) named by ``hyper.model``."""
        return get_model(self.hyper.model)

    @property
    def link(self) -> Link:
        return self.model.link

    @property
    def kernel_mask(self) -> np.ndarray | None:
        """The coupled set J that K applies (``None``: the full kernel)."""
        return self.model.covariance.mask(self.coupled)

    @cached_property
    def layout(self) -> ParamLayout:
        return layout_of(self.d, self.model.params(self.hyper.variant == "learned"))

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def p(self) -> int:
        return self.X.shape[1]

    @property
    def d(self) -> int:
        return self.U.shape[1]

    @property
    def m(self) -> float:
        return float(self.hyper.threshold_mean)

    @property
    def W_f(self) -> np.ndarray:
        """Squared meta-feature differences of the answered pairs (cached)."""
        W = self.__dict__.get("_W_f")
        if W is None or len(W) != len(self.pairs):
            W = self.__dict__["_W_f"] = pair_weights(self.U, self.pairs)
        return W

    def _copy(self, stale: str, **changes) -> ModelData:
        """A copy with ``changes``, without the cached ``stale`` (the rest shared, not copied)."""
        new = object.__new__(ModelData)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop(stale, None)
        new.__dict__.update(changes)
        return new

    def with_feedback(self, pairs: np.ndarray, f: np.ndarray) -> ModelData:
        """A copy with other answers (the regression data is shared, not copied)."""
        pairs, f = check_answers(pairs, f, self.p)
        return self._copy("_W_f", pairs=pairs, f=f)

    def with_relevance(self, classes: np.ndarray) -> ModelData:
        """A copy with other relevance classes (the rest shared, not copied)."""
        return self._copy("relevance_signal", relevance=check_relevance(classes, self.p))

    def with_direction(self, answers: np.ndarray) -> ModelData:
        """A copy with other direction answers (the rest shared, not copied)."""
        return self._copy("", direction=check_direction(answers, self.p))

    def answers_key(self) -> tuple[bytes, bytes]:
        """The relevance classes and direction signs the model reads, as bytes (empty if none)."""
        return (cast(np.ndarray, self.relevance).tobytes() if self.model.relevance else b"",
                self.direction_signs.tobytes() if self.model.direction else b"")

    @property
    def direction_signs(self) -> np.ndarray:
        """s of the prior mean ``delta s``: the answers, but 0 where a relevance class says
        irrelevant (its weight is pulled to 0); all zeros without a direction mean."""
        off = self.model.relevance and np.asarray(self.relevance) == IRRELEVANT
        return (np.where(off, 0.0, cast(np.ndarray, self.direction)) if self.model.direction
                else np.zeros(self.p))

    @property
    def delta_sd(self) -> float:
        """The prior sd of delta (:func:`~elicit.model.direction.delta_prior_sd` of y)."""
        return delta_prior_sd(self.y)

    @cached_property
    def relevance_signal(self) -> np.ndarray:
        """The relevance model's neighbour signal of the answers (zeros for other models)."""
        cov = self.model.covariance
        # relevance is an array after __post_init__; a covariance with scales has signal
        sig = (cast(RelevanceScales, cov).signal(cast(np.ndarray, self.relevance), self.U)
               if has_scales(cov) else np.zeros(self.p))
        sig.setflags(write=False)
        return sig

    def initial_params(self) -> Params:
        """The start of a cold fit: prior means (prior mode of tau^2 when it is learned)."""
        h = self.hyper
        tau2 = h.tau2 if h.variant == "fixed" else h.b_tau / (h.a_tau + 1.0)
        zeta = ZETA_PRIOR.mean if self.model.relevance else None
        # delta inside its bound (Stan's engines start from log delta)
        delta = DELTA_START * self.delta_sd if self.model.direction else None
        return Params(np.full(self.d, GAMMA_MEAN), self.m, tau2, zeta, delta)

    def to_stan(self) -> dict:
        """The data of the model's Stan program by name, composed of its parts' data."""
        out: dict = {}
        for part in self.model.parts:
            out.update(part.of(self).to_dict())
        return out


def _per_feature(values, p: int, allowed: tuple[int, ...], dtype: type, what: str,
                 kinds: str = "biuf") -> np.ndarray:
    """``values`` (``None``: all ``allowed[-1]``) as a read-only ``dtype`` array of one entry per
    feature, each in ``allowed``, of a dtype kind in ``kinds``; else the error ``what`` ({p}: the
    number of features, {shape}: the shape given)."""
    a = np.full(p, allowed[-1], dtype=dtype) if values is None else np.asarray(values)
    if a.shape != (p,) or a.dtype.kind not in kinds or not np.isin(a, allowed).all():
        raise ElicitError(what.format(p=p, shape=a.shape))
    a = a.astype(dtype)
    a.setflags(write=False)
    return a


def check_answers(pairs, f, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair answers as ``(m, 2)`` feature indices in ``0..p-1`` and ``m`` outcomes 1 (similar)
    or 0 (dissimilar), else a one-line :class:`ElicitError`."""
    pairs, f = np.asarray(pairs, dtype=int).reshape(-1, 2), np.asarray(f, dtype=int).reshape(-1)
    if len(pairs) != len(f):
        raise ElicitError(f"{len(pairs)} pairs but {len(f)} answers")
    if np.any((f != 0) & (f != 1)):
        raise ElicitError("answers f must be 1 (similar) or 0 (dissimilar)")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= p):
        raise ElicitError(f"pair indices must lie in 0..{p - 1}")
    return pairs, f


def check_relevance(classes, p: int) -> np.ndarray:
    """Relevance classes as read-only ints in {1, 0, -1} (``None``: all -1, nothing judged)."""
    return _per_feature(classes, p, (RELEVANT, IRRELEVANT, UNASKED), int,
                        "relevance must hold one class per feature ({p}), each 1 (relevant), "
                        "0 (irrelevant) or -1 (not judged); got shape {shape}")


def check_direction(answers, p: int) -> np.ndarray:
    """Direction answers as read-only floats in {1, -1, 0} (``None``: all 0, not known)."""
    return _per_feature(answers, p, (RAISES, LOWERS, UNJUDGED), float,
                        "direction must hold one answer per feature ({p}), each 1 (raises), "
                        "-1 (lowers) or 0 (not known); got shape {shape}")


def validate_regression(X, y, U, *, feature_names: Sequence[str] | None = None,
                        row_names: Sequence[str] | None = None,
                        meta_names: Sequence[str] | None = None,
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check shapes, values and size (:func:`check_size`) of (X, y, U); return them as float
    arrays. The names only word the messages: ``feature_names`` (X's columns, U's rows),
    ``row_names`` and ``meta_names`` (U's columns)."""
    cols = None if feature_names is None else [f"column {n!r}" for n in feature_names]
    feats = None if feature_names is None else [f"feature {n!r}" for n in feature_names]
    metas = None if meta_names is None else [f"meta-feature {n!r}" for n in meta_names]
    X = _as_float(X, "X", row_names, cols)
    y = _as_float(y, "y", row_names)
    U = _as_float(U, "meta-features U", feats, metas, ("feature", "meta-feature"), MAX_ABS_U)
    if X.ndim != 2:
        raise ElicitError(f"X must be a 2-D array (n samples x p features), got shape {X.shape}")
    if y.ndim == 2 and 1 in y.shape:
        y = y.reshape(-1)
    if y.ndim != 1:
        raise ElicitError(f"y must be a 1-D array of n targets, got shape {y.shape}")
    if U.ndim != 2:
        raise ElicitError(f"meta-features must be a 2-D array (p features x d), got {U.shape}")
    n, p = X.shape
    if n == 0 or p == 0:
        raise ElicitError(f"X is empty (shape {X.shape}): need at least one sample and feature")
    if y.shape[0] != n:
        raise ElicitError(f"X has {n} rows but y has {y.shape[0]} entries; they must match")
    if U.shape[0] != p:
        raise ElicitError(f"meta-features have {U.shape[0]} rows but X has {p} features; "
                          "there must be one meta-feature row per feature (column of X)")
    if U.shape[1] == 0:
        raise ElicitError("meta-features have no columns (d = 0)")
    check_size(n, p, U.shape[1], X)
    return X, y, U


#: The largest magnitude accepted in X, y and (``MAX_ABS_U``) U. A square beyond about 1.3e154
#: overflows double precision; 1e150 leaves room for the sums of squares of up to 1e8 such values
#: (y'y, X'X); the kernel's Hessian in gamma holds fourth powers of U's differences.
MAX_ABS, MAX_ABS_U = 1e150, 1e75


def _as_float(a, name: str, rows: Sequence[str] | None = None,
              columns: Sequence[str] | None = None,
              words: tuple[str, str] = ("row", "column"), limit: float = MAX_ABS) -> np.ndarray:
    """``a`` as a float array; ElicitError if it is not numeric, not finite or beyond
    ``limit`` (the first such value named by ``rows`` and ``columns`` if given, else by
    position: ``words``)."""
    if np.iscomplexobj(a):  # float() would drop the imaginary parts with a warning
        raise ElicitError(f"{name} must be real numbers, got complex values")
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as e:
        raise ElicitError(f"{name} must be numeric: {e}") from None
    finite = np.isfinite(arr)
    big = ~finite | (np.abs(arr) > limit)
    if not big.any():
        return arr
    if rows is not None and len(rows) != arr.shape[0]:
        rows = None  # names of other rows (a shape error follows): positions then
    if columns is not None and (arr.ndim != 2 or len(columns) != arr.shape[1]):
        columns = None
    at = tuple(int(k) for k in np.argwhere(big if finite.all() else ~finite)[0])
    where = [rows[at[0]] if rows is not None else f"{words[0]} {at[0]}"] if at else []
    if len(at) == 2:
        where.append(columns[at[1]] if columns is not None else f"{words[1]} {at[1]}")
    if not finite.all():
        raise ElicitError(f"{name} contains {int(np.size(arr) - np.count_nonzero(finite))} NaN "
                          "or infinite value(s)" + ", the first at " * bool(where)
                          + ", ".join(where) + "; remove or impute them")
    more = int(big.sum()) - 1
    raise ElicitError(f"{name} has {arr[at]:.3g} at {', '.join(where)}"
                      + (f" (and {more} more such value(s))" if more else "")
                      + f": values beyond ±{limit:.0e} overflow "
                      + ("when squared" if limit == MAX_ABS else "in the kernel") + "; rescale "
                      + ("that column" if len(at) == 2 else name)
                      + " (e.g. other units) or correct the value")


def model_bytes(n: int, p: int, d: int, support: int | None = None) -> int:
    """About the most memory a fit and a question round hold at once, in bytes (docs/estimator.md,
    "Cost"; a session's peak measured with tracemalloc at n = 20..800, p = 5..800, d = 3..800
    was 0.59 to 1.0 times this). With ``support`` (sparse-plus-offset inputs: the columns S
    touches) blocks of K and R on them and the pairs' indices replace p x p arrays."""
    if support is not None:
        return 8 * ((3 * (d + 1) + 8) * n * n + 4 * support * support + 12 * n * p
                    + 3 * p * d * d + p * p + 2 * 512 * p)
    if is_tall(n, p):
        return 8 * ((3 * (d + 1) + 8 + d + 25) * p * p + 8 * d * d + 4 * p * d
                    + row_numbers(p, d) * n)
    return 8 * ((3 * (d + 1) + 8) * n * n + (d + 25) * p * p + 4 * n * p + 4 * p * d)


def row_numbers(p: int, d: int) -> int:
    """Numbers a data row costs in the p x p form (docs/benchmarks.md, "A table with many rows")."""
    return 16 * p + 2 * (d + 2)


def check_size(n: int, p: int, d: int, X: np.ndarray | None = None,
               fewer: Callable[[int], str] | None = None, noun: str = "features",
               also: int = 0) -> None:
    """Refuse data whose model cannot fit in this machine's memory, saying what fits (with
    U = X', d grows with the rows). With ``fewer`` (p known before X is built: a corpus's
    keywords) only a p that no X fits, or the meta-features' ``also`` p x p arrays built before
    the model do not, is refused (with ``X``: the ``X`` this check refuses without ``fewer``),
    saying ``fewer(q)``, q the most any X fits (the arrays too)."""
    limit = memory_limit()
    found = None if X is None else structure_of(X, d)
    grows = d == n

    def need(m: int, q: int = p) -> int:
        return model_bytes(m, q, m if grows else d, None if found is None else len(found.cols))

    def largest(ok, hi: int) -> int:  # the largest k < hi with ok(k), given ok(1), not ok(hi)
        return bisect_left(range(1, hi + 1), True, key=lambda k: not ok(k))

    # the least an X not yet built holds: sparse plus an offset touching no column, if taken
    least = max(model_bytes(n, p, d, 0) if fewer and X is None and may_be_structured(n, p, d)
                else need(n), 8 * also * p * p)
    if limit is None or least <= limit:
        return
    size = f"{least / 2**30:,.0f} GiB, and this machine has {limit / 2**30:,.1f} GiB"
    if fewer is not None:
        raise ElicitError(f"{p:,} {noun} are too many for this machine (the model or its "
                          f"meta-features hold at least {size}): use "
                          f"{fewer(largest(lambda q: model_bytes(n, q, d) <= limit, p))}")
    held = (f"{row_numbers(p, d):,} numbers per row" if is_tall(n, p) and found is None
            else f"{3 * (d + 1) + 8:,} n x n arrays" if n >= p else f"{d + 25:,} p x p arrays")
    what = (f"the model holds about {held} at once (with d = {d:,} meta-features"
            f"{', one per row' if grows else ''})")
    head = f"{n:,} rows and {p:,} features are too many for this machine: {what}, about {size}"
    if need(1) > limit:
        q = largest(lambda q: need(n, q) <= limit, p)
        raise ElicitError(f"{head}: use " + (f"at most {q:,} features or " if q > 1 else "")
                          + "fewer meta-features")
    rows = largest(lambda m: need(m) <= limit, n)
    raise ElicitError(f"{head}: use at most {rows:,} rows (a random sample of them)"
                      + (", or fewer meta-features" if not grows else ""))


def _by_first(p: int) -> Iterator[tuple[int, slice, np.ndarray]]:
    """For each i, the rows of :func:`all_pairs` that start with i, and their js (i < j)."""
    js, k = np.arange(p), 0
    for i in range(p - 1):
        yield i, slice(k, k + p - 1 - i), js[i + 1:]
        k += p - 1 - i


def all_pairs(p: int) -> np.ndarray:
    """All p(p-1)/2 unordered pairs (i < j), by i, then j; filled in place (index arrays took
    twice the 800 MB of p = 10,000 again in temporaries)."""
    out = np.empty((p * (p - 1) // 2, 2), dtype=int)
    for i, rows, js in _by_first(p):
        out[rows, 0], out[rows, 1] = i, js
    return out


def is_all_pairs(pairs: np.ndarray, p: int) -> bool:
    """Whether ``pairs`` is :func:`all_pairs` of p, checked row by row without building it."""
    return pairs.shape == (p * (p - 1) // 2, 2) and all(
        np.all(pairs[rows, 0] == i) and np.array_equal(pairs[rows, 1], js)
        for i, rows, js in _by_first(p))


#: pairs per chunk of :func:`auto_threshold_mean`
_PAIR_CHUNK = 1 << 16


def auto_threshold_mean(U: np.ndarray, gamma0: np.ndarray, pairs: np.ndarray | None) -> float:
    """The authors' threshold prior mean: the mean of gamma0 . w over ``pairs`` (None: all), large
    sets in chunks (w of 2 million pairs at d = 100 would take 1.6 GB)."""
    p = len(U)
    if pairs is None and p * (p - 1) // 2 <= _PAIR_CHUNK:
        pairs = all_pairs(p)    # few: the one-expression sum below, as always
    if pairs is not None:
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    if pairs is None or (len(pairs) > _PAIR_CHUNK and is_all_pairs(pairs, p)):
        # every pair: sum_{i<j} (u_i - u_j)^2 = p sum_i u_i^2 - (sum_i u_i)^2, per column
        Uc = U - U.mean(axis=0)                 # the same sum, without cancellation
        m = float(p * np.sum(Uc * Uc, axis=0) @ gamma0) / (p * (p - 1) // 2)
    elif len(pairs) <= _PAIR_CHUNK:
        # one expression, as always: results stay bit for bit those of earlier versions
        m = float(np.mean(pair_weights(U, pairs) @ gamma0))
    else:
        total = sum(float(np.sum(pair_weights(U, pairs[k:k + _PAIR_CHUNK]) @ gamma0))
                    for k in range(0, len(pairs), _PAIR_CHUNK))
        m = total / len(pairs)
    if not 1 / MAX_ABS < m < MAX_ABS:  # the threshold prior divides by m^2
        raise ElicitError(f"cannot set threshold_mean='auto': the candidate pairs' meta-feature "
                          f"distances (gamma0 . w) average {m:.3g}; make the meta-features "
                          "differ between features and rescale them (each column to variance 1)")
    return m
