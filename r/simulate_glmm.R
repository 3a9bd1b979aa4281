# Simulations from a fitted GLMM (lme4::glmer / glmer.nb, glmmTMB::glmmTMB) for the
# simulated-residual diagnostics, on the scale DHARMa 0.4.7 uses (getObservedResponse /
# getSimulations / getFitted for merMod and glmmTMB): binomial responses as numbers of successes
# (a factor response: second level = 1; cbind(s, f): s; proportions with prior weights:
# proportion x weights), counts as they are, continuous responses as they are.

# Successes from a binomial response: a two-column matrix (cbind), a factor, logical or numeric
# vector; `w` the prior weights when the response is a proportion (else NULL).
me_glmm_successes <- function(y, w = NULL) {
  if (is.matrix(y) && ncol(y) == 2) return(as.numeric(y[, 1]))
  if (is.factor(y)) return(as.numeric(y) - 1)
  y <- as.numeric(y)
  if (!is.null(w)) {
    y <- y * w
    if (all(abs(y - round(y)) < 1e-8)) y <- round(y)
  }
  y
}

# The observed response on DHARMa's scale, the population-level prediction on the response scale
# (predict(re.form = NA, type = "response"), DHARMa's getFitted), the binomial trials of k/n
# responses (NULL otherwise) and family(m)$family; `prop_w` (the prior weights of a proportion
# response, else NULL) is what me_simulate_glmm needs to put simulations on the same scale.
me_glmm_observed <- function(m) {
  fam <- stats::family(m)$family
  mf <- stats::model.frame(m)
  y <- mf[[1]]
  trials <- NULL
  prop_w <- NULL
  if (fam %in% c("binomial", "betabinomial")) {
    w <- if ("(weights)" %in% names(mf)) as.numeric(mf[["(weights)"]]) else NULL
    prop_w <- if (!is.matrix(y) && !is.factor(y) && !is.logical(y)) w else NULL
    if (is.matrix(y) && ncol(y) == 2) trials <- as.numeric(rowSums(y))
    else if (!is.null(prop_w)) trials <- prop_w
    observed <- me_glmm_successes(y, prop_w)
  } else {
    observed <- as.numeric(if (is.matrix(y)) y[, 1] else y)
  }
  predicted <- as.numeric(stats::predict(m, type = "response", re.form = NA))
  list(observed = unname(observed), predicted = unname(predicted), trials = trials, family = fam,
       prop_w = prop_w)
}

# `nsim` simulations (an nobs x nsim matrix on the scale above) plus what me_glmm_observed
# returns. `conditional`: re.form = NULL (keep the fitted random effects) instead of NA (lme4 only).
me_simulate_glmm <- function(m, nsim, seed, conditional = FALSE) {
  out <- me_glmm_observed(m)
  n <- length(out$observed)
  if (inherits(m, "glmmTMB")) {
    s <- stats::simulate(m, nsim = nsim, seed = seed)
  } else {
    s <- stats::simulate(m, nsim = nsim, seed = seed, re.form = if (isTRUE(conditional)) NULL else NA)
  }
  if (out$family %in% c("binomial", "betabinomial")) {
    sims <- vapply(s, function(col) me_glmm_successes(col, out$prop_w), numeric(n))
  } else {
    sims <- vapply(s, as.numeric, numeric(n))
  }
  out$prop_w <- NULL
  c(list(simulated = unname(matrix(sims, nrow = n, ncol = nsim))), out)
}
