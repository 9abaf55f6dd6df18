"""The prior set-up, everything decided before the expert's first answer: the coupled set J,
the threshold prior and the no-feedback MAP (:mod:`~elicit.prior.setup`), and the choice of
tau^2 (:mod:`~elicit.prior.tau2`).
"""
