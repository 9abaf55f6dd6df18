"""A real expert's persistent session: the question flow (session), its file (store), its
inputs, exports and plots, and the terminal and web front ends."""
