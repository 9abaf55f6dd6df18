"""The model as a scikit-learn estimator, with the expert's answers given up front
(``docs/estimator.md``).
"""

from elicit.estimator.regressor import ElicitRegressor

__all__ = ["ElicitRegressor"]
