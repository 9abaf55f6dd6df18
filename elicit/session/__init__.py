"""A real expert's persistent session: the question flow (:mod:`~elicit.session.session`) on
the file and its model kept in step (:mod:`~elicit.session.state`, :mod:`~elicit.session.store`,
:mod:`~elicit.session.opening`, :mod:`~elicit.session.record`); a new session's data
(:mod:`~elicit.session.loaders`, :mod:`~elicit.session.inputs`); what it gives out
(:mod:`~elicit.session.export`, :mod:`~elicit.session.figures`) and its two front ends
(:mod:`~elicit.session.terminal`, :mod:`~elicit.session.web`).
"""
