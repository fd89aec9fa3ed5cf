"""The lab's tools beyond Python: computer algebra systems run in the sandbox, and the literature."""
