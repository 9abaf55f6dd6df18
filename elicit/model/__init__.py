"""The model: its specification, kernel, log density (with batched and posterior forms)."""
