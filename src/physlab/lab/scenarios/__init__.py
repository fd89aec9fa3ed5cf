"""Scripted scenarios for the lab (``scripted:lab-qec``): deterministic role players used by the
no-key demo and the tests. They decide from what they are shown (prompt, tool returns), never
from a stored answer: numbers flow from the sandbox output into later steps."""
