"""CritPt's grading server as its public code describes it: where it is and how many batches it grades
a day. Plain constants, apart from the format's models, so that `physlab bench submit-critpt`'s
options (whose help shows both) load nothing else."""

# evaluate_all_results.py's default --server-url; requests carry the key in ``x-api-key``.
DEFAULT_URL = "https://artificialanalysis.ai/api/v2/critpt/evaluate"
DAILY_LIMIT = 10  # submissions per account within 24 hours (CritPt README, "Grading")
