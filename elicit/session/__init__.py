"""A real expert's persistent session (:class:`~elicit.session.session.Session`): the question
flow, the file and its model, the data, exports and two front ends (``docs/session.md``)."""
