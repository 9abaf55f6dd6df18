"""Checks shared by tests of several layers: finite differences of the log density, random
model data with answers, and the distance between two MAPs; and the set-up of sessions and
command lines that many tests repeat. Only the model layer is imported at the top, so a test of
any layer may use them (the session and the command lines are imported where they are used)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import importlib.util
import json
import os
import re
import signal
import sqlite3
import sys
import types
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

from elicit.model.covariance import RELEVANCE
from elicit.model.density import hessian, log_density
from elicit.model.result import MAPResult
from elicit.model.spec import Hyper, ModelData, all_pairs, auto_threshold_mean
from elicit.model.theta import join_theta


def tiny_problem(seed: int, run: int):
    """A run's problem for sweeps of a few seconds: the synthetic design with 10 training and
    20 test rows, the group oracle as the expert, the learned-tau2 model."""
    from elicit import GroupOracle
    from elicit.harness.problem import RunProblem
    from elicit.model.simulate import make_synthetic

    sd = make_synthetic(np.random.default_rng([seed, run]), n_train=10, n_test=20)
    return RunProblem(sd.X, sd.y, sd.U, sd.X_test, sd.y_test, GroupOracle(sd.groups),
                      Hyper(variant="learned"))


def question_rows(el) -> np.ndarray:
    """Every question of an elicitor as a row, in table order (the table listed whole)."""
    return el.table.rows(np.arange(len(el.table), dtype=np.int64))


def theta_point(data: ModelData, seed: int = 1) -> np.ndarray:
    """An interior point away from the prior means, so that no term is at a stationary point
    (zeta, if the model has it, at -0.7: a share of relevant features of 0.33)."""
    rng = np.random.default_rng(seed)
    gamma = rng.uniform(0.3, 2.0, data.d)
    return join_theta(gamma, 1.3 * data.m, 0.7, data,
                      zeta=-0.7 if "zeta" in data.layout else None,
                      delta=0.4 if "delta" in data.layout else None)


def some_relevance(p: int) -> np.ndarray:
    """Relevance classes with every kind: features 0, 4, 8, ... relevant, 1, 5, ... irrelevant,
    the others not judged."""
    return np.array([(1, 0, -1, -1)[j % 4] for j in range(p)])


def relevance_data(variant: str = "fixed", classes="mixed", n_feedback: int = 4,
                   seed: int = 0, **shape) -> ModelData:
    """The small problem (``conftest.make_small_data``) under the relevance model; classes
    ``"mixed"``: :func:`some_relevance`, None: none judged, or an array of classes."""
    from conftest import make_small_data

    from elicit.model.variants import RELEVANCE_MODEL

    base = make_small_data(variant, n_feedback=n_feedback, seed=seed, **shape)
    h = Hyper(**{**base.hyper.__dict__, "model": RELEVANCE_MODEL})
    cls = some_relevance(base.p) if isinstance(classes, str) else classes
    return ModelData(base.X, base.y, base.U, h, base.pairs, base.f, relevance=cls)


def projected_grad(theta: np.ndarray, data: ModelData) -> np.ndarray:
    """Gradient of ``log_density`` with the components that push against an active lower
    bound zeroed (KKT), xi's scaled by m (the coordinates the engines converge in)."""
    _, g = log_density(theta, data)
    lb = data.layout.lower_bounds()
    g = np.where((theta <= lb) & (g < 0), 0.0, g)
    g[data.d] *= data.m
    return g


def two_modes_after_one_answer():
    """A maker of elicitors (one per engine) on a small problem (n 12, p 8, d 3, learned tau2)
    whose first answer, (0, 1) similar, had probability 0.00046 under the no-feedback MAP. The
    warm refit switches gamma_3 off (a local maximum on the boundary); a cold fit finds an
    interior maximum 0.458 higher."""
    from elicit.elicitation.elicitor import Elicitor

    rng = np.random.default_rng(88)
    X, U = rng.normal(size=(12, 8)), rng.normal(size=(8, 3))
    y = X @ rng.normal(size=8) + 0.3 * rng.normal(size=12)
    return lambda engine: Elicitor(X, y, U, Hyper(variant="learned"), engine=engine)


def some_direction(p: int) -> np.ndarray:
    """Direction answers with every value: features 0, 3, ... raise, 1, 4, ... lower, the
    others not known."""
    return np.array([(1, -1, 0)[j % 3] for j in range(p)])


def fd_grad(fun, theta: np.ndarray, rel: float = 1e-5) -> np.ndarray:
    """Central differences of a scalar (or vector) function, one column per coordinate."""
    cols = []
    for a in range(len(theta)):
        h = rel * max(1.0, abs(theta[a]))
        e = np.zeros_like(theta)
        e[a] = h
        cols.append((np.asarray(fun(theta + e)) - np.asarray(fun(theta - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def assert_derivatives_match_finite_differences(data, theta: np.ndarray | None = None,
                                                rel: float = 1e-5) -> None:
    """The analytic gradient and Hessian of ``log_density`` at ``theta`` (default a typical
    point) against central finite differences of step ``rel`` (:func:`fd_grad`; shared with
    ``test_models.py``)."""
    theta = theta_point(data) if theta is None else theta
    _, g = log_density(theta, data)
    g_fd = fd_grad(lambda t: log_density(t, data)[0], theta, rel)
    # Each component on its own scale: one large term (the tau2 prior's gradient is 4e6 at
    # tau2 = 1e-3) must not make the others' tolerance larger than they are.
    np.testing.assert_allclose(g, g_fd, rtol=1e-5, atol=1e-9 * np.max(np.abs(g)))
    H = hessian(theta, data)
    H_fd = fd_grad(lambda t: log_density(t, data)[1], theta, rel)
    s = np.sqrt(np.abs(np.diag(H)))
    assert (np.abs(H - H_fd) <= 1e-5 * np.abs(H_fd) + 1e-6 * np.outer(s, s)).all(), (H, H_fd)


def make_data(variant: str, n: int, p: int, d: int, n_f: int, seed: int,
              counts: bool = True) -> ModelData:
    """Random data in which the first two meta-features matter.

    The answers call a pair similar when it is close in those two meta-features, so enough
    of them move gamma well away from its prior mean (some components towards 0).
    """
    rng = np.random.default_rng(seed)
    U = rng.poisson(0.5, size=(p, d)).astype(float) if counts else rng.normal(size=(p, d))
    X = rng.normal(size=(n, p))
    y = X @ (np.sin(2 * U[:, 0]) + U[:, 1]) + 0.5 * rng.normal(size=n)
    pairs = all_pairs(p)
    m = auto_threshold_mean(U, np.ones(d), pairs)
    asked = pairs[rng.choice(len(pairs), n_f, replace=False)]
    f = (4 * ((U[asked[:, 0], :2] - U[asked[:, 1], :2]) ** 2).sum(axis=1) < m).astype(int)
    return ModelData(X, y, U, Hyper(variant=variant, threshold_mean=m), asked, f)


def theta_of(r: MAPResult, data: ModelData) -> np.ndarray:
    """MAP as a vector with xi divided by its prior mean, so all coordinates weigh alike."""
    extra = [r.tau2] if data.hyper.variant == "learned" else []
    if r.zeta is not None:
        extra.append(r.zeta)
    return np.concatenate([r.gamma, [r.xi / data.m], extra])


def rel_diff(a: MAPResult, b: MAPResult, data: ModelData) -> float:
    ta, tb = theta_of(a, data), theta_of(b, data)
    return float(np.linalg.norm(ta - tb) / np.linalg.norm(tb))


def assert_png(path, width: int | None = None, height: int | None = None) -> None:
    """``path`` is a PNG image (of the given pixel size) with something drawn on it: more
    than a handful of distinct colours, not a blank canvas."""
    import matplotlib.image as mpimg

    img = mpimg.imread(str(path))
    assert img.ndim == 3, f"{path} is not a colour image"
    if width is not None:
        assert img.shape[1] == width, (path, img.shape)
    if height is not None:
        assert img.shape[0] == height, (path, img.shape)
    # Each pixel packed into one integer, 16 bits a channel: a PNG's levels are k / 255 or
    # k / 65535, so the rounding gives k * 257 or k back exactly and distinct colours stay
    # distinct. (np.unique over the rows, axis=0, sorted them as records: about a second of
    # CPU for a figure.)
    levels = np.round(img.reshape(-1, img.shape[2]) * 65535).astype(np.uint64)
    packed = np.zeros(len(levels), np.uint64)
    for channel in levels.T:
        packed = (packed << np.uint64(16)) | channel
    colours = np.unique(packed)
    assert len(colours) > 16, f"{path} has only {len(colours)} colours: nothing drawn"


def signal_direct(classes: np.ndarray, U: np.ndarray) -> np.ndarray:
    """The relevance model's neighbours' weighted mean answer of each feature, written out
    from its design (:class:`~elicit.model.covariance.RelevanceScales`): a loop over the
    judged neighbours, weights exp(-|u_j - u_k|^2 / (2 bandwidth median)), shrunk by
    ``shrink``."""
    p = len(U)
    dist = [((U[i] - U[j]) ** 2).sum() for i in range(p) for j in range(i + 1, p)]
    # the median distance, else (most pairs coincide) the median of the nonzero ones
    med = float(np.median(dist)) or float(np.median([x for x in dist if x > 0]))
    out = []
    for j in range(p):
        num, den = 0.0, RELEVANCE.shrink
        for k in range(p):
            if k == j or classes[k] == -1:
                continue
            w = np.exp(-0.5 * ((U[j] - U[k]) ** 2).sum() / (RELEVANCE.bandwidth * med))
            num += w * (1.0 if classes[k] == 1 else -1.0)
            den += w
        out.append(num / den)
    return np.array(out)


def dense_log_density(theta: np.ndarray, data: ModelData, threshold_sd: float,
                      coupled: np.ndarray | None, relevance: np.ndarray | None = None,
                      direction: np.ndarray | None = None) -> float:
    """The log posterior density of the shipped models written out directly (an independent
    formula): dense K with the known-coupling mask applied entrywise, the Student-t marginal
    of y by ``slogdet`` and ``solve``, the priors and the logistic answers term by term.
    Constants are those of ``log_density`` (which drops the truncation normalisers).

    With ``relevance`` (classes 1/0/-1) the relevance model: zeta is theta's last entry, the
    prior covariance ``tau2 diag(h) K diag(h)`` with h^2 = 1, 0.01 or s + (1 - s) 0.01,
    s = logistic(zeta + spread a_j) (a_j: :func:`signal_direct`), and zeta ~ N(logit(0.1),
    1).

    With ``direction`` (signs 1/-1/0) beta's prior mean is ``delta s``, delta theta's last
    entry: y's Student-t is centred at ``X delta s`` (X unscaled) and delta ~ N+(0, rms(y));
    with both, a feature of class 0 (irrelevant) has no sign."""
    from scipy.special import gammaln

    d, n = data.d, data.n
    gamma, xi = theta[:d], theta[d]
    learned = data.hyper.variant == "learned"
    tau2 = theta[d + 1] if learned else data.hyper.tau2
    U = data.U
    K = np.exp(-0.5 * np.einsum("ijl,l->ij", (U[:, None, :] - U[None, :, :]) ** 2, gamma))
    if coupled is not None:
        keep = np.outer(coupled, coupled) | np.eye(len(coupled), dtype=bool)
        K = np.where(keep, K, 0.0)
    X = data.X
    if relevance is not None and direction is not None:
        direction = np.where(relevance == 0, 0, direction)
    r = data.y if direction is None else data.y - theta[-1] * (data.X @ direction)
    if relevance is not None:
        zeta = theta[-2] if direction is not None else theta[-1]
        s = 1.0 / (1.0 + np.exp(-(zeta + RELEVANCE.spread * signal_direct(relevance, U))))
        lam = np.where(relevance == 1, 1.0, np.where(relevance == 0, 0.01,
                                                     s + (1 - s) * 0.01))
        X = X * np.sqrt(lam)
    S = np.eye(n) + tau2 * X @ K @ X.T
    a, b = data.hyper.a_sigma, data.hyper.b_sigma
    a_star = a + n / 2
    b_star = b + 0.5 * r @ np.linalg.solve(S, r)
    value = (gammaln(a_star) - gammaln(a) - 0.5 * n * np.log(2 * np.pi * b)
             - 0.5 * np.linalg.slogdet(S)[1] - a_star * np.log(b_star / b))
    value += -0.5 * np.sum((gamma - 1.0) ** 2) / 0.5 ** 2
    m = data.m
    value += -0.5 * (xi - m) ** 2 / (threshold_sd * m) ** 2
    if learned:
        value += -(data.hyper.a_tau + 1.0) * np.log(tau2) - data.hyper.b_tau / tau2
    if relevance is not None:
        value += -0.5 * (zeta - np.log(0.1 / 0.9)) ** 2
    if direction is not None:
        value += -0.5 * theta[-1] ** 2 / np.mean(data.y**2)
    for (i, j), f in zip(data.pairs, data.f):
        z = xi - gamma @ (U[i] - U[j]) ** 2
        value += -np.log1p(np.exp(-z)) if f == 1 else -np.log1p(np.exp(z))
    return float(value)


def own_program(learned: bool, *, reorder: bool = False) -> str:
    """A Stan program of one's own for the paper's model, as a user would write it: one tau2
    variant only, its one-entry data (``tau_fixed``, ``a_tau``, ``b_tau``) and ``tau`` declared
    as scalars, the kernel included from the shipped ``elicit_kernel.stan`` (found in the
    shipped folder whatever folder the program is in). ``reorder`` declares the parameters in
    another order, after a block comment."""
    tau_data = ("  real<lower=0> a_tau;\n  real<lower=0> b_tau;\n" if learned
                else "  real<lower=0> tau_fixed;\n")
    params = ["  vector<lower=0>[d] gamma;\n", "  real<lower=0> threshold;\n"]
    if learned:
        params.append("  real<lower=0> tau;\n")
    if reorder:
        params = ["  /* reordered */\n", *params[::-1]]
    tau = "tau" if learned else "tau_fixed"
    return (
        "// a program of one's own: the paper's model, tau^2 "
        + ("learned" if learned else "fixed") + "\n"
        "functions {\n#include elicit_kernel.stan\n}\n"
        "data {\n"
        "  int<lower=1> N;\n  int<lower=1> M;\n  int<lower=1> d;\n  int<lower=0> N_f;\n"
        "  vector[N] y;\n  matrix[N, M] X;\n  matrix[M, d] FD;\n"
        "  array[N_f] int<lower=0, upper=1> f;\n  matrix[N_f, d] W_f;\n"
        "  real<lower=0> a_sigma;\n  real<lower=0> b_sigma;\n  real<lower=0> threshold_mean;\n"
        + tau_data + "}\n"
        "parameters {\n" + "".join(params) + "}\n"
        "model {\n"
        "  matrix[M, M] K = kernel(FD, gamma);\n"
        "  gamma ~ normal(1, 0.5);\n"
        "  threshold ~ normal(threshold_mean, threshold_mean / 2);\n"
        + ("  tau ~ inv_gamma(a_tau, b_tau);\n" if learned else "")
        + "  y ~ multi_student_t(2 * a_sigma, rep_vector(0, N),\n"
        f"                      (b_sigma / a_sigma) * add_diag({tau} * quad_form_sym(K, X'), 1));\n"
        "  f ~ bernoulli_logit(threshold - W_f * gamma);\n"
        "}\n")


def assert_same_numbers(a, b, rtol: float = 1e-12, where: str = "") -> None:
    """``a`` and ``b`` (JSON-like: dicts, lists, numbers, strings) are the same, floats to
    ``rtol``: results of one computation run in other processes (sweep workers, a cluster),
    where sums can round differently in the last bits (numpy's SIMD reductions depend on
    the arrays' alignment). Everything else (questions, answers, counts, names) exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same_numbers(a[k], b[k], rtol, f"{where}/{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} != {len(b)} items"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same_numbers(x, y, rtol, f"{where}[{k}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), (where, a, b)
        assert a == b or abs(a - b) <= rtol * max(abs(a), abs(b)), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_same_sweep(a, b, rtol: float = 1e-12) -> None:
    """The sweep folders ``a`` and ``b`` hold the same results (:func:`assert_same_numbers`):
    the table ``mse.csv`` and every run's record under ``parts/``."""
    import json
    from pathlib import Path

    import pandas as pd

    a, b = Path(a), Path(b)
    ta, tb = pd.read_csv(a / "mse.csv"), pd.read_csv(b / "mse.csv")
    pd.testing.assert_frame_equal(ta, tb, check_exact=False, rtol=rtol, atol=0)
    parts = sorted(p.relative_to(a) for p in (a / "parts").rglob("*.json"))
    assert parts == sorted(p.relative_to(b) for p in (b / "parts").rglob("*.json"))
    for p in parts:
        assert_same_numbers(json.loads((a / p).read_text()), json.loads((b / p).read_text()),
                            rtol, str(p))


# A small review corpus (tests of the real-data pipeline on any review file)

POSITIVE = ["great", "excellent", "love", "perfect", "sturdy", "recommend"]
NEGATIVE = ["broken", "terrible", "waste", "flimsy", "returned", "disappointed"]
NEUTRAL = ["pan", "lid", "handle", "kettle", "knife", "blender", "pot", "spoon", "bowl", "oven",
           "toaster", "mixer", "plate", "glass", "steel", "plastic", "color", "size", "box",
           "price", "gift", "kitchen", "coffee", "water", "heat", "clean", "dishwasher", "cook",
           "bought", "order", "weeks", "months", "daily", "design", "weight", "cover", "cup",
           "tea", "bread", "rice"]


def write_corpus(path, n=1300, seed=0, text_field="review", rating_field="stars"):
    """``n`` JSON-lines reviews, gzipped; rating = 3 + #positive - #negative (+ noise)."""
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(_corpus_text(n, seed, text_field, rating_field))
    return path


@functools.lru_cache(maxsize=8)
def _corpus_text(n: int, seed: int, text_field: str, rating_field: str) -> str:
    """:func:`write_corpus`'s lines, drawn once per process for each argument set (drawing
    1300 reviews word by word costs a quarter of a second, and several tests write the same
    corpus)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        words = list(rng.choice(NEUTRAL, size=rng.integers(5, 10)))
        pos = rng.integers(0, 3)
        neg = rng.integers(0, 3)
        words += list(rng.choice(POSITIVE, size=pos)) + list(rng.choice(NEGATIVE, size=neg))
        rng.shuffle(words)
        stars = int(np.clip(np.rint(3 + pos - neg + 0.5 * rng.standard_normal()), 1, 5))
        lines.append(json.dumps({text_field: " ".join(words), rating_field: stars}) + "\n")
    return "".join(lines)


def check_data_dir_as_elicit_data(run, tmp_path, capsys, monkeypatch) -> None:
    """For a command given a corpus, ``run(out, data_dir)`` (``data_dir`` None: not given) ->
    its exit status: ``--data-dir DIR`` is where the corpus's stop list is checked, as with
    ``$ELICIT_DATA=DIR``. A missing DIR, or one with another stop list, is the same one-line
    error either way and writes nothing (``a*``, ``b*``); an existing DIR without a stop list
    is taken, by the option (``c``) and by the variable (``d``)."""
    from elicit.data.files import DATA_ENV, STOPWORDS_FILE

    other = tmp_path / "other"
    other.mkdir()
    (other / STOPWORDS_FILE).write_text("kettle\n")
    for folder in (tmp_path / "no" / "such", other):
        monkeypatch.delenv(DATA_ENV, raising=False)
        assert run(tmp_path / "a", folder) == 2
        by_option = capsys.readouterr().err
        monkeypatch.setenv(DATA_ENV, str(folder))
        assert run(tmp_path / "b", None) == 2
        by_env = capsys.readouterr().err
        assert str(folder) in by_option and by_option.count("\n") == 1, by_option
        assert by_option.replace("--data-dir / data_dir option",
                                 f"environment variable {DATA_ENV}") == by_env
    assert not [*tmp_path.glob("a*"), *tmp_path.glob("b*")]
    monkeypatch.delenv(DATA_ENV)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(tmp_path / "c", empty) == 0
    monkeypatch.setenv(DATA_ENV, str(empty))
    assert run(tmp_path / "d", None) == 0


def lockable_elsewhere(folder) -> bool:
    """Whether another holder could lock ``folder`` now (a second open file takes its own
    lock, as another process would)."""
    import fcntl
    import os

    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------
# Sessions, command lines, files
# --------------------------------------------------------------------------------------------


def create_session(path, **kw):
    """A new session on the tiny session data set (``conftest.make_session_data``, with its
    feature names) in the file ``path``; ``kw`` go to ``Session.create``, the engine is
    numpy unless they name one."""
    from conftest import SESSION_NAMES, make_session_data

    from elicit.session.session import Session

    X, y, U = make_session_data()
    kw.setdefault("engine", "numpy")
    return Session.create(X, y, U, SESSION_NAMES, path=path, **kw)


#: the headers of a POST from the session's own page (the Origin check passes)
SAME = {"Origin": "http://localhost"}


def page_state(html: str) -> dict:
    """What the session page ``html`` carries for its next POST: the CSRF token, the shown
    question's id (None if none is shown) and the message line (None if none)."""
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    qid = re.search(r'name="query_id" value="(\d+)"', html)
    msg = re.search(r'id="message"[^>]*>([^<]*)<', html)
    return {"token": token, "qid": qid.group(1) if qid else None,
            "message": msg.group(1) if msg else None}


def shown(client) -> dict:
    """The state (:func:`page_state`) of the page a Flask test ``client`` is shown now."""
    return page_state(client.get("/").get_data(as_text=True))


def answer_shown(client, answer: str = "similar", headers=SAME, **form):
    """The question shown to ``client`` answered through the page's form (``form``: more
    fields): the page's state before, and the response."""
    st = shown(client)
    return st, client.post("/answer", data={"csrf_token": st["token"], "query_id": st["qid"],
                                            "answer": answer, **form}, headers=headers)


class Elements(HTMLParser):
    """The start tags of a page in document order, each with its attributes and the text up
    to its end tag (void elements: none)."""

    VOID = {"input", "meta", "link", "img", "br"}

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict, list[str]]] = []
        self._open: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        text: list[str] = []
        self.found.append((tag, {k: v or "" for k, v in attrs}, text))
        if tag not in self.VOID:
            self._open.append(text)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self._open:
            self._open.pop()

    def handle_data(self, data):
        for text in self._open:
            text.append(data)

    @classmethod
    def of(cls, html: str) -> list[tuple[str, dict]]:
        parser = cls()
        parser.feed(html)
        return [(t, {**a, "text": " ".join("".join(x).split())}) for t, a, x in parser.found]


def fail_the_next_refit(monkeypatch) -> None:
    """The model's next refit fails (an EngineError), after its answer or undo is saved."""
    from elicit.elicitation.elicitor import Elicitor
    from elicit.errors import EngineError

    set_answers, fail = Elicitor.set_answers, [True]

    def failing_once(self, *args, **kwargs):
        if fail and fail.pop():
            raise EngineError("the optimiser gave up")
        return set_answers(self, *args, **kwargs)

    monkeypatch.setattr(Elicitor, "set_answers", failing_once)


def run_main(main, capsys, *argv) -> tuple[int, str, str]:
    """A command line's ``main`` run in this process on ``argv`` (each made a string): its exit
    status, as a shell sees it (argparse's own errors exit with 2), and what it wrote (stdout,
    stderr). Bind ``main`` once per test file: ``cli = functools.partial(run_main, main)``,
    then ``cli(capsys, "history", path)``."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The error message ``err`` (what a command wrote to stderr) as its one line: asserts
    that it is one line and no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def write_jsonl(path, recs, gz: bool | None = None):
    """The records ``recs`` (dicts) as JSON lines in the file ``path`` (returned), gzipped
    if ``gz``; by default if its name ends in ``.gz``."""
    text = "".join(json.dumps(r) + "\n" for r in recs)
    if gz or (gz is None and str(path).endswith(".gz")):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


_OPENING: list[list[Path]] = []


def _note_open(event: str, args: tuple) -> None:
    # Python's "open" audit event: every open of a file by name (open, io.open, os.open)
    if event == "open" and _OPENING and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENING[-1].append(Path(os.fsdecode(args[0])))


@contextlib.contextmanager
def files_opened():
    """The list of the paths opened inside the block, each as often as it was opened. One
    audit hook serves every block (a hook cannot be removed); outside a block it does nothing."""
    if not getattr(files_opened, "hooked", False):
        sys.addaudithook(_note_open)
        files_opened.hooked = True  # type: ignore[attr-defined]
    _OPENING.append(opened := [])
    try:
        yield opened
    finally:
        _OPENING.pop()


def sql_rows(path, query: str, *params) -> list[tuple]:
    """The rows of ``query`` on the SQLite file ``path`` (a session file read directly, as
    another program would); the connection is closed after."""
    import sqlite3

    raw = sqlite3.connect(path)
    try:
        return raw.execute(query, params).fetchall()
    finally:
        raw.close()


def sql_edit(path, query: str, *params) -> None:
    """``query`` run on the SQLite file ``path`` and committed: a change made behind elicit's
    back (a damaged file, one from an older elicit, the state another writer left)."""
    import sqlite3

    raw = sqlite3.connect(path)
    try:
        raw.execute(query, params)
        raw.commit()
    finally:
        raw.close()


# --------------------------------------------------------------------------------------------
# A process answering a session until it is killed
# --------------------------------------------------------------------------------------------


def act_until_killed(s, seed: int, log_path, undo: float, skip: float = 0.0,
                     answer=None) -> None:
    """What a child process does with the open session ``s`` until it is killed: undo the last
    answer (probability ``undo``, and whenever all is answered), skip the next question
    (probability ``skip``) or answer it (``answer(q, rng)``, by default a random pair answer;
    now and then with a comment). Each action is appended to ``log_path`` only after it has
    returned, in one ``write`` (a line is all there or not at all; :func:`read_log`):
    ``undo ID``, ``skip QUERY``, ``answer ID QUERY ANSWER``, and ``try QUERY`` just before an
    answer, to count the kills that land inside one."""
    import os
    import random

    from elicit.errors import ElicitError

    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(line: str) -> None:
        os.write(fd, (line + "\n").encode())

    while True:
        r = rng.random()
        if s.is_done() or r < undo:
            try:
                log(f"undo {s.undo().id}")
                continue
            except ElicitError:
                pass
        q = s.next_query()
        if r > 1 - skip:
            s.skip(q)
            log(f"skip {q.id}")
            continue
        ans = answer(q, rng) if answer else rng.choice(["similar", "dissimilar", "dont_know"])
        log(f"try {q.id}")
        rec = s.answer(q, ans, comment=f"c{q.id}" if rng.random() < 0.3 else None)
        log(f"answer {rec.id} {q.id} {ans}")


def run_then_kill(target, args: tuple, seconds: float, sig: int | None = None,
                  timeout: float = 60.0):
    """``target(*args)`` in a forked child process, sent the signal ``sig`` (default SIGKILL)
    after ``seconds``: the child, once it has ended (or ``timeout`` seconds have passed)."""
    import multiprocessing
    import os
    import signal
    import time

    child = multiprocessing.get_context("fork").Process(target=target, args=args)
    child.start()
    time.sleep(seconds)
    os.kill(child.pid, signal.SIGKILL if sig is None else sig)
    child.join(timeout)
    return child


def read_log(path) -> list[list[str]]:
    """The lines of a log written by :func:`act_until_killed`, split into words; the last
    piece (empty, or a line torn by a kill) is left out."""
    from pathlib import Path

    path = Path(path)
    if not path.exists():
        return []
    return [ln.split() for ln in path.read_text().split("\n")[:-1] if ln]


def experiment_script(name: str) -> types.ModuleType:
    """The module of ``experiments/<name>.py``, loaded afresh (the scripts are no package)."""
    path = Path(__file__).resolve().parent.parent / "experiments" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def leave_hot_journal(path: str | os.PathLike) -> None:
    """Leave a "hot" journal beside the session file ``path``: a child process starts a
    commit larger than its cache (pages spill into the file) and is killed before it ends."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        try:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("PRAGMA cache_size = 10")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO texts VALUES (999, 0, ?)", ("x" * 2_000_000,))
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    assert os.path.getsize(f"{path}-journal") > 0


def write_mixed_config(folder: Path, dataset: str, rounds: int, pool: str = "open") -> None:
    """The ``config.json`` of a made-up realdata sweep with relevance and pair questions
    (``--questions both``), for tests that read sweep folders as the report does."""
    cfg = {"dataset": dataset, "data_dir": "/nowhere", "seed": 0, "rounds": rounds,
           "standardize": "model", "tau2": "cv", "pool_size": 400, "expert_rule": "target",
           "expert_nonzero": 40, "engine": "numpy", "utility": "fast", "refine": 5,
           "meta_features": "ppmi", "meta_dim": 10, "model": "relevance",
           "utility_target": "predictive", "questions": "both", "pool": pool}
    (folder / "config.json").write_text(json.dumps(cfg))


def mean_se_text(x, sign: bool = False) -> str:
    """``x``'s mean and standard error as the report prints them ("1.234 ± 0.005"; with
    ``sign`` "+0.012 ± 0.003"; one value: no error), computed here, not by the report."""
    x = np.asarray(x, dtype=float)
    m = x.mean()
    text = f"{m:+.3f}" if sign else f"{m:.3f}"
    return text + (f" ± {x.std(ddof=1) / np.sqrt(x.size):.3f}" if x.size > 1 else "")


def bench_record(commit: str, date: str, **values: float) -> dict:
    """A ``make bench`` record (``docs/bench/<commit>.json``) of the test CPU with these
    figures (seconds; megabytes for a name ending in ``_mb``)."""
    figures = {k: {"label": k.replace("_", " "), "unit": "MB" if k.endswith("_mb") else "s",
                   "target": None, "value": v} for k, v in values.items()}
    return {"version": 1, "commit": commit, "date": date,
            "machine": {"cpu": "test CPU", "cores": 2}, "settings": {}, "figures": figures,
            "skipped": {}}


def with_answers(data: ModelData, pairs, f) -> ModelData:
    """``data`` with more pair answers: ``pairs`` one pair or an (m, 2) array, ``f`` their
    outcomes (1 similar, 0 dissimilar)."""
    return data.with_feedback(np.vstack([data.pairs, np.reshape(pairs, (-1, 2))]),
                              np.append(data.f, f))


class Captured(Exception):
    """Raised by :func:`capture_sweep`'s stand-in once it has kept the configuration."""


def capture_sweep(monkeypatch, module, name: str) -> list:
    """Replace the library call ``module.name`` (``run_synthetic``, ``run_realdata``) by one
    that keeps its configuration and raises :class:`Captured` (the command imports it from its
    module when it runs): what the command line passes on, without a sweep."""
    seen: list = []

    def run(cfg, out, progress=True):
        seen.append(cfg)
        raise Captured

    monkeypatch.setattr(module, name, run)
    return seen
