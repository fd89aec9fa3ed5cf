"""The TPBench test-time-scaling study (seed 002): shared stages of tpbench-vote, -bon, -weak, -sympy."""
