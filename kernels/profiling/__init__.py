"""Candidate profiles: torch.profiler traces taken in the judge, summarised for people and models.

Entry for callers: `qrsup.kernels.profiling.candidate.profile_candidate`.
"""
