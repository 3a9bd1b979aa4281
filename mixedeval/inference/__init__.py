"""Mixed-model inference: ANOVA with effect sizes, likelihood-ratio tests, EMMs and contrasts,
R² and ICC, optimizer checks. Every number comes from R or a published formula."""
