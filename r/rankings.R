# Estimates of an emmGrid and their covariance matrix, for simultaneous rank intervals
# (mixedeval/inference/rankings.py): the joint normal of the estimated marginal means on the
# grid's linear-predictor (link) scale, emmeans' predict(grid, type = "link") and vcov(grid).
me_emm_vcov <- function(grid) {
  list(estimate = as.numeric(predict(grid, type = "link")),
       vcov = unname(as.matrix(stats::vcov(grid))))
}
