"""Arena audits: how robust a Bradley–Terry leaderboard is (votes to flip, probes)."""
