"""Private helpers (BLAS threading, atomic files); not part of the public API."""
