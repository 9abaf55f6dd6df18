"""``--check-engine`` (:class:`CheckedEngine`): both engines must solve the same problem; two
stationary points of a multimodal posterior are recorded, and the run goes on from the
higher one.

The engines checked here are numpy engines made to behave like a Stan engine in one respect
each (a log density with other constants, a cold start whatever the start, another
density), so that every branch runs in a second; tests/engines/test_cmdstan.py runs the check
with CmdStan itself.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest
from conftest import make_session_data

from elicit.elicitation.elicitor import Elicitor
from elicit.engines import get_engine
from elicit.engines.checked import CheckedEngine
from elicit.engines.numpy_engine import NumpyEngine
from elicit.errors import ElicitError, EngineError
from elicit.model.density import log_density
from elicit.model.refit_checks import local_gain
from elicit.model.spec import Hyper
from elicit.model.theta import theta_of

#: the program's constants, which differ from the twin's formula
OFFSET = 6.66


class StanLike(NumpyEngine):
    """A numpy engine with a Stan engine's ``log_prob``: the same density, other constants.

    ``cold``: every fit starts from the prior means, whatever the start (so it can end in
    another mode than the twin's warm refit). ``tilt``: the density it optimises and
    reports has an extra ``tilt * theta_0`` (another model). ``jump``: ``log_prob`` adds
    ``jump`` where gamma_2 > 0.1 (same gradients, other log-density differences).
    """

    name = "stanlike"

    def __init__(self, variant: str, cold: bool = False, tilt: float = 0.0,
                 jump: float = 0.0) -> None:
        super().__init__(variant)
        self.cold, self.tilt, self.jump = cold, tilt, jump

    def fit(self, data, init=None, *, hessian=None):
        if self.cold:
            init, hessian = None, None
        if self.tilt:
            # the MAP of another density: the twin's threshold prior mean moved
            other = replace(data, hyper=data.hyper.with_threshold_mean(data.m * (1 + self.tilt)))
            res = super().fit(other, init, hessian=None)
        else:
            res = super().fit(data, init, hessian=hessian)
        return replace(res, engine=self.name, log_density=res.log_density + OFFSET)

    def log_prob(self, data, theta):
        lp, g = log_density(theta, data)
        gamma = theta[data.layout["gamma"]]
        return lp + OFFSET + (self.jump if gamma[1] > 0.1 else 0.0), g


#: make_session_data(seed, n, p, d): a problem whose posterior has two modes after the
#: answers of _answer (gamma_2 = 0 from the warm refits, an interior one 0.12 lower from a
#: cold start)
SMALL = (4, 12, 6, 3)


def _answer(el: Elicitor) -> None:
    el.answer(0, 1, "similar")
    el.answer(2, 5, "dissimilar")


def _elicitor(engine) -> Elicitor:
    X, y, U = make_session_data(*SMALL)
    return Elicitor(X, y, U, Hyper(variant="learned"), engine=engine)


def _theta(el: Elicitor) -> np.ndarray:
    f = el.fit
    return theta_of(f, el.data)


def test_two_stationary_points_are_recorded_and_the_run_goes_on_from_the_higher(caplog):
    twin = _elicitor("numpy")
    _answer(twin)
    checked = CheckedEngine(StanLike("learned", cold=True))
    el = _elicitor(checked)
    with caplog.at_level(logging.WARNING, logger="elicit.engines.checked"):
        _answer(el)
    # The cold fit ends in the interior mode, the twin's warm refit in the boundary mode:
    # both recorded, and the run continues from the twin's (higher) point.
    last = checked.records[-1]
    assert last.n_answers == 2 and last.kept == "twin"
    assert last.lp_twin - last.lp_engine == pytest.approx(0.117, abs=0.01)
    assert last.lp_twin == pytest.approx(twin.fit.log_density, abs=1e-8)
    np.testing.assert_allclose(_theta(el), _theta(twin), atol=1e-8)
    # a result of the engine in use, its log density on that engine's scale
    assert el.fit.engine == "stanlike"
    assert el.fit.log_density == pytest.approx(twin.fit.log_density + OFFSET, abs=1e-6)
    assert "report different stationary points" in caplog.text
    assert "continuing from the twin's" in caplog.text
    assert f"{last.lp_engine:.6f}" in caplog.text and f"{last.lp_twin:.6f}" in caplog.text


def test_check_engine_stop_stops_at_two_stationary_points():
    el = _elicitor(get_engine("numpy", "learned"))  # the no-feedback fit
    checked = CheckedEngine(StanLike("learned", cold=True), modes="stop")
    el.engine = checked
    el.answer(0, 1, "similar")
    with pytest.raises(EngineError, match=r"after 2 answers stanlike and the numpy twin report "
                                          r"different stationary points of the same density "
                                          r"\(gamma\[\d\] = .*\): log density -33\.52\d+ at "
                                          r"stanlike's, -33\.40\d+ at the twin's "
                                          r"\(--check-engine stop\)"):
        el.answer(2, 5, "dissimilar")


def test_the_same_point_passes_and_returns_the_engines_fit():
    checked = CheckedEngine(StanLike("learned"))
    el = _elicitor(checked)
    _answer(el)
    assert checked.checks >= 3 and checked.records == []
    assert el.fit.engine == "stanlike"


def test_an_engine_of_another_density_is_stopped_at_its_map():
    # Its MAP is no stationary point of the twin's density.
    checked = CheckedEngine(StanLike("learned", tilt=0.5))
    with pytest.raises(EngineError, match=r"after 0 answers stanlike's MAP is not a stationary "
                                          r"point of the twin's density: it rises by "
                                          r"[\d.e+-]+ nearby .* solves another problem"):
        _elicitor(checked)


def test_gradients_or_log_density_differences_that_differ_at_the_same_point_are_stopped():
    class Steep(StanLike):
        def log_prob(self, data, theta):
            lp, g = super().log_prob(data, theta)
            return lp + 0.01 * theta[0], g + np.eye(len(theta))[0] * 0.01

    with pytest.raises(EngineError, match=r"disagree at the same point \(stanlike's MAP\): "
                                          r"d log p / d log gamma\[0\] = .*: they do not fit "
                                          r"the same model"):
        _elicitor(CheckedEngine(Steep("learned")))
    # Same gradients, but the log density jumps by 0.5 between the two modes.
    checked = CheckedEngine(StanLike("learned", cold=True, jump=0.5))
    with pytest.raises(EngineError, match=r"disagree on the log density: from stanlike's MAP "
                                          r"to the twin's it changes by"):
        _answer(_elicitor(checked))


def test_local_gain_is_zero_at_a_map_and_the_rise_elsewhere():
    el = _elicitor("numpy")
    _answer(el)
    theta = _theta(el)
    assert el.fit.gamma.min() == 0.0
    v, g, gain = local_gain(theta, el.data)
    assert v == pytest.approx(el.fit.log_density, abs=1e-9) and gain < 1e-9
    # A hair above the boundary, as an optimiser in log(gamma) leaves it: still stationary.
    hair = theta.copy()
    hair[np.argmin(el.fit.gamma)] = 1e-9
    assert local_gain(hair, el.data)[2] < 1e-7
    # Away from the MAP the gain is about the rise to it (a quadratic model near it).
    for k, step in ((0, 0.05), (len(theta) - 2, 0.1)):
        moved = theta.copy()
        moved[k] += step
        rise = el.fit.log_density - log_density(moved, el.data)[0]
        assert local_gain(moved, el.data)[2] == pytest.approx(rise, rel=0.2)
    # gamma_2 moved off its bound (where the density is far from quadratic): the model holds
    # it there again, and the gain is the first-order rise of moving it back, an
    # underestimate here but far above any tolerance.
    off = theta.copy()
    k = int(np.argmin(el.fit.gamma))
    off[k] = 0.01
    rise = el.fit.log_density - log_density(off, el.data)[0]
    assert 0.1 * rise < local_gain(off, el.data)[2] < rise


def test_check_engine_options():
    assert isinstance(get_engine("numpy", "fixed", check=True), CheckedEngine)
    assert get_engine("numpy", "fixed", check="stop").modes == "stop"
    assert get_engine("numpy", "fixed", check="higher").modes == "higher"
    with pytest.raises(ElicitError, match="--check-engine takes higher or stop, got 'maybe'"):
        get_engine("numpy", "fixed", check="maybe")
    # built directly too, not silently taken for "higher" (found in review, 2026-11-29)
    with pytest.raises(ElicitError, match="--check-engine takes higher or stop, got 'maybe'"):
        CheckedEngine(NumpyEngine("fixed"), modes="maybe")
