"""A real expert's persistent session: storage, question flow, export, web and terminal."""
