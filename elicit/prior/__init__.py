"""Everything decided before the expert's first answer: J, the threshold prior and the
no-feedback MAP (:mod:`~elicit.prior.setup`), and tau^2 (:mod:`~elicit.prior.tau2`)."""
