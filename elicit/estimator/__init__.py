"""The model as a scikit-learn estimator, with the expert's answers given up front.

:class:`~elicit.estimator.regressor.ElicitRegressor` (``docs/estimator.md``) fits the model
of Afrabandpey, Peltola & Kaski (IJCAI 2019) with scikit-learn's API;
:mod:`elicit.estimator.feedback` resolves what a user hands it (answers and features given by
name or by column index, numeric tables) to indices, with one-line errors, and
:mod:`elicit.estimator.fitting` chooses tau2 and fits the MAP with the answers. Everything
decided before the answers (the tau2 grids and criteria, the coupled set J, the no-feedback
fit) comes from :mod:`elicit.prior`.
"""

from elicit.estimator.regressor import ElicitRegressor

__all__ = ["ElicitRegressor"]
