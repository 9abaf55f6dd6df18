"""Asking the expert: answers and experts, utilities, strategies, the elicitor."""
