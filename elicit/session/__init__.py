"""A real expert's persistent session.

:mod:`~elicit.session.session` is the question flow (:class:`~elicit.session.session.Session`)
on top of :mod:`~elicit.session.state` (the file and its model kept in step); the file is
:mod:`~elicit.session.store`, :mod:`~elicit.session.opening` and :mod:`~elicit.session.record`.
A new session's data come from :mod:`~elicit.session.loaders` and are checked by
:mod:`~elicit.session.inputs`; :mod:`~elicit.session.questions` says which questions may be
asked and how they are named. What a session gives out is in :mod:`~elicit.session.export`
and :mod:`~elicit.session.figures`, which read it through its public methods;
:mod:`~elicit.session.terminal` and :mod:`~elicit.session.web` are the expert's two front
ends.
"""
