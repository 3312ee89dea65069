"""The plan a profile implies (see :mod:`resumable.plan.model`)."""
