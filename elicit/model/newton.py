"""Projected Newton with a frozen base Hessian: the numpy engine's warm refits, one problem or
many at once.

Each iteration takes the projected Newton step (:func:`projected_step`) of the quadratic
model made of the *base* part (y-likelihood and priors, its Hessian frozen at the previous
MAP) and the exact feedback terms, or optionally the maximiser of the *local model*
(:func:`solve_local_model`: the base quadratic plus the exact feedback terms, no kernel
work), and backtracks (Armijo, 1e-4). :class:`NewtonRun` runs a stack of rows: the engine's
refit is a stack of one (:class:`OneRefit`), the batched refits of candidate answers a stack
of many. A stack of one multiplies with single-vector operations, a stack with ``einsum``:
each the order it has always used, so that results stay bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from elicit.model.density import feedback_terms, hessian_base, log_density
from elicit.model.linalg import damped_solve, stacked_cholesky
from elicit.model.marginal import Marginal
from elicit.model.spec import ModelData

RUNNING, CONVERGED, FAILED, HELD = "running", "converged", "failed", "held"


@dataclass(frozen=True)
class NewtonSettings:
    """Settings of :class:`NewtonRun`: convergence at a Newton decrement below ``tol``, failure
    after ``max_iter`` iterations, ``line_search_trials`` step lengths 1, 1/2, ...

    ``local_model``: solve the local model at each iteration, to a decrement of
    ``model_tol * tol`` in ``model_max_iter`` iterations of ``model_trials`` step lengths.
    ``ridge`` None: solve each row's free block, damped only if not positive definite; a number:
    add that ridge (relative to the largest diagonal entry) to every system, solve them at once,
    and take a gradient step where that is no ascent direction. ``final_step``: take the last
    (tiny) step too. ``refresh_at``: recompute the base Hessian once, before this iteration or
    when a line search fails (None: never, a failed line search ends the row; at 8 instead of
    16 the synthetic query rounds were 15% slower and no MAP changed). ``stall_tol``: a failed
    line search below this decrement is convergence up to rounding. ``secant``: a BFGS update of
    ``-hess_base`` along each accepted step (skipped where the curvature is not positive)."""

    tol: float = 1e-10
    max_iter: int = 30
    local_model: bool = False
    ridge: float | None = None
    final_step: bool = True
    line_search_trials: int = 14
    refresh_at: int | None = 16
    stall_tol: float | None = 1e-8
    model_tol: float = 1e-3
    model_max_iter: int = 50
    model_trials: int = 27
    secant: bool = False


class NewtonProblem:
    """The rows of a stack of refits of ``data``, as :class:`NewtonRun` sees them (a base)."""

    data: ModelData
    #: lower bounds of theta (k,)
    lb: np.ndarray
    #: a stack of one: products by single-vector operations (see the module docstring)
    single: bool

    def feedback(self, rows: np.ndarray, theta: np.ndarray, hess: bool):
        """Feedback terms of ``rows`` at ``theta``: value (r,), gradient (r, k), Hessian or None
        (with the Hessian the value may be None: the run reads only the other two then)."""

    def evaluate(self, rows: np.ndarray, theta: np.ndarray):
        """Log density (r,) (-inf where there is none), gradient (r, k) and per-row extras to keep
        with an accepted point (arrays with a leading axis r, or None) of ``rows`` at ``theta``."""

    def hessian_base(self, row: int, theta: np.ndarray) -> np.ndarray:
        """The base Hessian of row ``row`` at ``theta`` (only needed with ``refresh_at``): the
        y-likelihood's and the priors', which do not depend on the answers."""
        return hessian_base(theta, self.data)


def _dot(a: np.ndarray, b: np.ndarray, single: bool) -> np.ndarray:
    """a_c' b_c for each row."""
    if single:
        return np.array([float(a[0] @ b[0])])
    return np.einsum("ci,ci->c", a, b)


def _quad(s: np.ndarray, H: np.ndarray, single: bool) -> np.ndarray:
    """s_c' H_c s_c for each row (H (C, k, k), one per row)."""
    if single:
        return np.array([s[0] @ (H[0] @ s[0])])
    return np.einsum("ci,cij,cj->c", s, H, s)


def _times(s: np.ndarray, H: np.ndarray, single: bool) -> np.ndarray:
    """H_c s_c for each row (H (C, k, k), one per row)."""
    if single:
        return (H[0] @ s[0])[None, :]
    return np.einsum("cij,cj->ci", H, s)


def projected_step(H: np.ndarray, g: np.ndarray, theta: np.ndarray, lb: np.ndarray,
                   ridge: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps (C, k) of concave quadratic models (Hessians ``H`` (C, k, k), gradients
    ``g`` (C, k)) and their decrements (C,); parameters on their lower bounds are held there
    where the gradient pushes them out. ``ridge`` as in :class:`NewtonSettings`."""
    free = ~((theta <= lb) & (g < 0))
    if free.all():
        # nothing clamped (most steps): the matrix below without the masks' passes (+ 0.0 turns
        # -0.0 into 0.0, as adding the zero identity term does)
        A = -H + 0.0
        g = g.copy()
    else:
        # clamped parameters: identity rows/columns and zero gradient, so that every row's
        # free block is solved at once
        mask = free[:, :, None] & free[:, None, :]
        A = np.where(mask, -H, 0.0) + np.where(free, 0.0, 1.0)[:, :, None] * np.eye(g.shape[1])
        g = np.where(free, g, 0.0)
    if ridge is None:
        pd = stacked_cholesky(A)[1]
        step = np.zeros_like(theta)
        if pd.all():        # the common case, without the masks' copies
            step = np.linalg.solve(A, g[:, :, None])[:, :, 0]
        elif pd.any():
            step[pd] = np.linalg.solve(A[pd], g[pd][:, :, None])[:, :, 0]
        for c in np.flatnonzero(~pd):
            # this row's free block is not positive definite: damped alone
            fc = free[c]
            step[c, fc] = damped_solve(A[c][np.ix_(fc, fc)], g[c, fc])
        return step, np.einsum("ci,ci->c", g, step)
    # A tiny ridge keeps stale, slightly indefinite Hessians solvable.
    scale = np.maximum(1.0, np.abs(np.einsum("cii->ci", A)).max(axis=1))
    A = A + (ridge * scale)[:, None, None] * np.eye(g.shape[1])
    step = np.linalg.solve(A, g[:, :, None])[:, :, 0]
    dec = np.einsum("ci,ci->c", g, step)
    bad = ~np.isfinite(dec) | (dec < 0)
    # A non-ascent direction (indefinite stale Hessian): fall back to a gradient step.
    step[bad] = g[bad] / scale[bad, None]
    dec[bad] = np.einsum("ci,ci->c", g[bad], step[bad])
    return step, dec


def solve_local_model(problem: NewtonProblem, rows: np.ndarray, theta: np.ndarray,
                      g_base: np.ndarray, H_base: np.ndarray, step0: np.ndarray,
                      dec0: np.ndarray, tol: float, settings: NewtonSettings) -> np.ndarray:
    """The maximiser s (C, k) of each row's local model

        m(s) = g_base' s + s' H_base s / 2 + F(theta + s) - F(theta)

    over ``theta + s >= lb`` (F: the row's feedback terms), by projected Newton with backtracking
    from s = 0, the first step ``step0`` with decrement ``dec0``, ``H_base`` (C, k, k). The
    caller's line search guards the result."""
    lb, single = problem.lb, problem.single
    F0 = problem.feedback(rows, theta, False)[0]

    def model(sub: np.ndarray, s: np.ndarray) -> np.ndarray:
        Fs = problem.feedback(rows[sub], theta[sub] + s, False)[0]
        return (_dot(g_base[sub], s, single) + 0.5 * _quad(s, H_base[sub], single) + Fs - F0[sub])

    C = len(theta)
    s = np.zeros_like(theta)
    m = np.zeros(C)
    st, dec = step0.copy(), dec0.copy()
    active = np.ones(C, bool)
    for _ in range(settings.model_max_iter):
        live = np.flatnonzero(active)
        if len(live) == 0:
            break
        sub = live          # the rows still backtracking, all at step length 2^-k
        for k in range(settings.model_trials):
            if not len(sub):
                break
            trial = np.maximum(theta[sub] + s[sub] + 0.5 ** k * st[sub], lb) - theta[sub]
            mt = model(sub, trial)
            ok = mt >= m[sub] + 1e-4 * 0.5 ** k * dec[sub]
            s[sub[ok]], m[sub[ok]] = trial[ok], mt[ok]
            sub = sub[~ok]
        active[sub] = False          # no model ascent left: keep s
        live = live[active[live]]
        if len(live) == 0:
            break
        x = theta[live] + s[live]
        _, fg, fH = problem.feedback(rows[live], x, True)
        st[live], dec[live] = projected_step(
            H_base[live] + fH, g_base[live] + _times(s[live], H_base[live], single) + fg, x,
            lb, settings.ridge)
        fin = live[~(dec[live] >= tol)]
        ok = np.isfinite(dec[fin])
        s[fin[ok]] = np.maximum(theta[fin[ok]] + s[fin[ok]] + st[fin[ok]], lb) - theta[fin[ok]]
        active[fin] = False
    return s


class NewtonRun:
    """Projected Newton on a stack of C problems, one iteration of every running row per
    :meth:`step`; a row follows the same iterations whatever else is in the stack.

    Parameters
    ----------
    problem, settings
        The rows (:class:`NewtonProblem`) and :class:`NewtonSettings`.
    theta, value, grad
        Start points (C, k), their log densities and gradients, updated in place.
    hess_base
        The base Hessian at the start, (k, k) shared or (C, k, k); each row keeps a copy.
    extras
        Per-row extras at the start (:meth:`NewtonProblem.evaluate`), or None.

    ``status`` holds each row's state, ``extras`` those of its last accepted point, ``final``
    the last step of a converged row."""

    def __init__(self, problem: NewtonProblem, theta: np.ndarray, value: np.ndarray,
                 grad: np.ndarray, hess_base: np.ndarray, settings: NewtonSettings,
                 extras: tuple[np.ndarray, ...] | None = None) -> None:
        self.problem, self.settings = problem, settings
        self.lb = problem.lb
        self.theta, self.value, self.grad = theta, value, grad
        C = len(theta)
        self.hess_base = np.array(np.broadcast_to(hess_base, (C, *hess_base.shape[-2:])))
        self.extras = extras
        # fixed-width strings wide enough for every status: compared in a C loop, not per row
        self.status = np.full(C, RUNNING, dtype=np.array([RUNNING, CONVERGED, FAILED, HELD]).dtype)
        self.final = np.zeros_like(theta)
        #: rows whose decrement falls below this (not below the tolerance) are held (a screen)
        self.hold_below: float | None = None
        #: each row's log density at the start, and its iterations
        self.start_value = value.copy()
        self.iters = np.zeros(C, int)
        self.it = 0
        self.refreshed = np.zeros(C, bool)
        self._next: tuple | None = None
        #: (rows, feedback terms) at the points the last secant update took, for direction()
        self._fed: tuple | None = None

    def running(self) -> np.ndarray:
        return np.flatnonzero(self.status == RUNNING)

    def advance(self, until: int | None = None) -> None:
        """Step while rows are running, up to iteration ``until`` (default: to the end)."""
        while len(self.running()) and (until is None or self.it < until):
            self.step()

    def hold(self, rows: np.ndarray) -> None:
        """Stop the running ones of ``rows`` where they are (status ``"held"``)."""
        rows = np.asarray(rows, dtype=int)
        self.status[rows[self.status[rows] == RUNNING]] = HELD

    def tighten(self, tol: float) -> None:
        """Go on to the decrement ``tol``: rows converged to a looser one run on."""
        self.settings = replace(self.settings, tol=tol)
        self.status[self.status == CONVERGED] = RUNNING
        self.final[:] = 0.0
        self._next = None

    def resume(self, rows: np.ndarray) -> None:
        """Let the held ones of ``rows`` go on: each takes the step it would have taken."""
        rows = np.asarray(rows, dtype=int)
        self.status[rows[self.status[rows] == HELD]] = RUNNING
        self._next = None

    def direction(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, steps, decrements, feedback gradients) of the running rows, once per iteration."""
        if self._next is None:
            st = self.settings
            if st.refresh_at is not None and self.it + 1 == st.refresh_at:
                for c in self.running():
                    if not self.refreshed[c]:
                        self._refresh(c)
            rows, fed, self._fed = self.running(), self._fed, None
            _, fg, fH = (fed[1] if fed is not None and np.array_equal(fed[0], rows)
                         else self.problem.feedback(rows, self.theta[rows], True))
            step, dec = projected_step(self.hess_base[rows] + fH, self.grad[rows],
                                       self.theta[rows], self.lb, st.ridge)
            self._next = (rows, step, dec, fg)
        return self._next

    def _secant_update(self, rows: np.ndarray, theta_old: np.ndarray,
                       g_base_old: np.ndarray) -> None:
        """BFGS update of each row's ``-hess_base`` along its accepted step."""
        theta = self.theta[rows]
        s = theta - theta_old
        # with the Hessian: the next direction() needs both at these points if these rows run on
        self._fed = (rows, self.problem.feedback(rows, theta, True))
        fg = self._fed[1][1]
        y = -((self.grad[rows] - fg) - g_base_old)          # the change of -gradient
        A = -self.hess_base[rows]
        As = np.einsum("cij,cj->ci", A, s)
        sAs, ys = np.einsum("ci,ci->c", s, As), np.einsum("ci,ci->c", y, s)
        ok = (sAs > 0) & (ys > 1e-12 * np.maximum(sAs, 1e-300))
        if not ok.any():
            return
        A, As, y = A[ok], As[ok], y[ok]
        A = A + y[:, :, None] * (y / ys[ok, None])[:, None, :] \
            - As[:, :, None] * (As / sAs[ok, None])[:, None, :]
        self.hess_base[rows[ok]] = -0.5 * (A + A.transpose(0, 2, 1))

    def _refresh(self, c: int) -> None:
        self.hess_base[c] = self.problem.hessian_base(c, self.theta[c])
        self.refreshed[c] = True

    def step(self) -> None:
        """One iteration of every running row."""
        if not (self.status == RUNNING).any():
            return
        st, problem, lb = self.settings, self.problem, self.lb
        rows, step, dec, fg = self.direction()
        self._next = None
        self.it += 1
        self.iters[rows] += 1
        done = dec < st.tol
        if done.any():
            conv = rows[done]
            # the last (tiny) step moves theta by ~sqrt(decrement), the log density ~decrement/2
            self.final[conv] = np.maximum(self.theta[conv] + step[done], lb) - self.theta[conv]
            if st.final_step:
                self.theta[conv] += self.final[conv]
            self.status[conv] = CONVERGED
        keep = ~done
        if self.hold_below is not None:
            held = keep & (dec < self.hold_below)
            self.status[rows[held]] = HELD
            keep &= ~held
        if not keep.all():      # (mostly every row goes on: no copies then)
            rows, step, dec, fg = rows[keep], step[keep], dec[keep], fg[keep]
        if len(rows):
            theta, grad = self.theta[rows], self.grad[rows]
            g_base = grad - fg
            if st.local_model:
                direction = solve_local_model(problem, rows, theta, g_base, self.hess_base[rows],
                                              step, dec, st.model_tol * st.tol, st)
            else:
                direction = step
            slope = _dot(grad, direction, problem.single)
            bad = ~(np.isfinite(slope) & (slope > 0))
            direction[bad], slope[bad] = step[bad], dec[bad]
            pending = self._line_search(rows, theta, direction, slope)
            if st.secant and (~pending).any():
                self._secant_update(rows[~pending], theta[~pending], g_base[~pending])
            for j in np.flatnonzero(pending):
                # no ascent: the optimum up to rounding if the decrement is tiny, else a stale
                # Hessian, refreshed once if allowed
                c = rows[j]
                if st.stall_tol is not None and dec[j] < st.stall_tol:
                    self.status[c] = CONVERGED
                elif st.refresh_at is None or self.refreshed[c]:
                    self.status[c] = FAILED
                else:
                    self._refresh(c)
        if self.it >= st.max_iter:
            self.status[self.status == RUNNING] = FAILED

    def _line_search(self, rows: np.ndarray, theta: np.ndarray, direction: np.ndarray,
                     slope: np.ndarray) -> np.ndarray:
        """Backtrack each row from step 1 to an Armijo rise (1e-4); the rows that found none."""
        # every row still pending tries the same step length 2^-trial: one float, and the
        # pending rows' positions instead of a mask (the same arithmetic, fewer numpy calls)
        live = np.arange(len(rows))
        for trial in range(self.settings.line_search_trials):
            if not len(live):
                break
            t, sub = 0.5 ** trial, rows[live]
            cand = np.maximum(theta[live] + t * direction[live], self.lb)
            v, g, extras = self.problem.evaluate(sub, cand)
            ok = v >= self.value[sub] + 1e-4 * t * slope[live]
            acc = sub[ok]
            self.theta[acc], self.value[acc], self.grad[acc] = cand[ok], v[ok], g[ok]
            if extras is not None:
                if self.extras is None:
                    self.extras = tuple(np.zeros((len(self.theta), *e.shape[1:])) for e in extras)
                for mine, e in zip(self.extras, extras):
                    mine[acc] = e[ok]
            live = live[~ok]
        return np.bincount(live, minlength=len(rows)) > 0


class OneRefit(NewtonProblem):
    """A warm refit of one :class:`ModelData` as a stack of one."""

    single = True

    def __init__(self, data: ModelData) -> None:
        self.data = data
        self.lb = data.layout.lower_bounds()
        self._last: tuple[bytes, tuple] | None = None

    def feedback(self, rows: np.ndarray, theta: np.ndarray, hess: bool):
        # the run asks for the terms at one point several times: the last point's are kept
        key = theta[0].tobytes()
        if self._last is not None and self._last[0] == key and (
                not hess or self._last[1][2] is not None):
            v, g, H = self._last[1]
        else:
            v, g, H = feedback_terms(theta[0], self.data, hess)
            self._last = (key, (v, g, H))
        # copies: the kept terms must not change with what a caller does to its arrays
        return np.array([v]), g[None].copy(), None if H is None or not hess else H[None].copy()

    def evaluate(self, rows: np.ndarray, theta: np.ndarray):
        data = self.data
        try:
            mg = Marginal.at(theta[0], data)
        except np.linalg.LinAlgError:
            # S numerically indefinite (an extreme tau2 or gamma): no density there
            return np.array([-np.inf]), np.zeros_like(theta), None
        v, g = log_density(theta[0], data, mg)
        return np.array([v]), g[None], None
