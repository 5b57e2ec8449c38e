"""Chaos suite: random, replayable schedules of faults, writes and compactions (see harness)."""
