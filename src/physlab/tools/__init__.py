"""The lab's tools beyond Python: computer algebra systems in the sandbox, and the literature
(arXiv, INSPIRE-HEP and a local corpus). Each capability is a subpackage; docs/tools.md says what
each tool is, how to enable it and what it sends where."""
