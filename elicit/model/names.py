"""The names of the shipped models, apart from their parts: the kinds of question name the
model they need without loading the covariance and scipy (:mod:`elicit.model.variants`)."""

PAPER = "paper"
RELEVANCE_MODEL = "relevance"
#: the names of the models with direction answers: alone, and with relevance answers (the
#: model of sweeps that ask every kind of question)
DIRECTION_MODEL = "direction"
RELEVANCE_DIRECTION_MODEL = "relevance-direction"
