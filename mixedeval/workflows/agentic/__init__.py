"""Small agentic evaluations: Bayesian hierarchical models, pass@k and pass^k, time horizons."""
