"""The model behind a session: every expert's answers in one feedback likelihood.

:class:`PooledElicitor` is an :class:`~elicit.elicitation.elicitor.Elicitor` whose
:meth:`~PooledElicitor.set_answers` accepts a pair answered more than once (two experts may
answer the same pair; both answers enter the likelihood as two Bernoulli observations) and
keeps, separately, which pairs the *current* expert has answered: those are the pairs that
expert is not asked again. The base class refuses repeated pairs in ``set_answers`` because
in a simulation one expert answers each pair once.

:func:`question_pairs` says which pairs may be asked at all: pairs between features left out
of the questions (constant or duplicate columns) and pairs whose meta-features are identical
(the kernel gives them K_ij = 1 whatever gamma is, so no answer about them can change the
model) are not asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from elicit.elicitation.answers import Answer
from elicit.elicitation.elicitor import Elicitor
from elicit.engines.base import MAPResult
from elicit.errors import ElicitError
from elicit.internal.threads import single_blas_thread
from elicit.model.spec import all_pairs


class PooledElicitor(Elicitor):
    """An elicitor fed by several experts (see the module docstring)."""

    @single_blas_thread
    def set_answers(self, answers: Sequence[tuple], asked: Iterable[tuple[int, int]] | None = None,
                    ) -> MAPResult:
        """Replace all answers and refit once from the no-feedback MAP.

        Parameters
        ----------
        answers
            ``(i, j, answer, ...)`` of every expert, in answer order; a pair may repeat.
        asked
            The pairs the current expert has answered (not offered again); default: the
            pairs in ``answers``.
        """
        pairs, fs = [], []
        self.history = []
        for i, j, a, *_ in answers:
            ans = Answer.parse(a)
            k = self._pair_index(i, j)
            i, j = self.candidates[k]
            self.history.append((int(i), int(j), ans))
            if ans.f is not None:
                pairs.append((i, j))
                fs.append(ans.f)
        self.set_asked([(i, j) for i, j, *_ in answers] if asked is None else asked)
        self.data = self.base.with_feedback(np.array(pairs, dtype=int).reshape(-1, 2),
                                            np.array(fs, dtype=int))
        if fs:
            self.fit = self.engine.fit(self.data, init=self.initial_fit,
                                       hessian=self._initial_hessian)
            self._hessian = None
        else:
            self.fit, self._hessian = self.initial_fit, self._initial_hessian
        return self.fit

    def set_asked(self, asked: Iterable[tuple[int, int]]) -> None:
        """Mark the pairs the current expert has answered (no refit: the fit depends on the
        answers, not on who asks next)."""
        self._asked[:] = False
        for i, j in asked:
            self._asked[self._pair_index(i, j)] = True


def question_pairs(U: np.ndarray, excluded: Iterable[int] = ()) -> np.ndarray:
    """The candidate pairs of a session: pairs of features not ``excluded`` whose rows of
    ``U`` differ.

    Raises
    ------
    ElicitError
        When no pair is left (fewer than two features to ask about, or all their
        meta-features identical).
    """
    p = U.shape[0]
    keep = np.setdiff1d(np.arange(p), np.fromiter(excluded, dtype=int))
    if len(keep) < 2:
        raise ElicitError(f"only {len(keep)} of the {p} features can be asked about (the "
                          "others are constant or duplicate columns); need at least 2")
    pairs = all_pairs(p)
    pairs = pairs[np.isin(pairs[:, 0], keep) & np.isin(pairs[:, 1], keep)]
    differ = np.any(U[pairs[:, 0]] != U[pairs[:, 1]], axis=1)
    if not differ.any():
        raise ElicitError(f"all {len(keep)} features to ask about have identical "
                          "meta-features (identical rows of U), so no answer could change "
                          "the model; give meta-features that differ between features")
    return pairs[differ]
