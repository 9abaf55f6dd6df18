"""The model as a scikit-learn estimator, with the expert's answers given up front
(:class:`~elicit.estimator.regressor.ElicitRegressor`, ``docs/estimator.md``).

:mod:`~elicit.estimator.feedback` resolves what a user hands it to indices;
:mod:`~elicit.estimator.fitting` chooses tau2 and fits the MAP; everything decided before the
answers comes from :mod:`elicit.prior`.
"""

from elicit.estimator.regressor import ElicitRegressor

__all__ = ["ElicitRegressor"]
