# Helpers of the variance-component and system-comparison workflows.

# Likelihood-ratio test between two nested linear models without random effects (the
# seed-averaged analysis of Hagmann 2023, Table 2.2: Eq. 2.10 against Eq. 2.11), laid out like
# lme4's anova(m0, m1): chisq = 2 (logLik(m1) - logLik(m0)) with ML log-likelihoods (lm's
# logLik is the ML one), df = difference in parameters, p = pchisq(chisq, df, lower = FALSE).
# The classical F test of the same hypothesis (anova(m0, m1)) is returned beside it.
me_lm_glrt <- function(null_formula, full_formula, data, model_names = c("null", "full")) {
  m0 <- stats::lm(stats::as.formula(null_formula), data = data)
  m1 <- stats::lm(stats::as.formula(full_formula), data = data)
  ll <- list(stats::logLik(m0), stats::logLik(m1))
  npar <- vapply(ll, function(l) as.integer(attr(l, "df")), integer(1))
  loglik <- vapply(ll, as.numeric, numeric(1))
  chisq <- max(0, 2 * (loglik[2] - loglik[1]))
  df <- npar[2] - npar[1]
  f <- stats::anova(m0, m1)
  tab <- data.frame(
    model = model_names,
    npar = npar,
    aic = c(stats::AIC(m0), stats::AIC(m1)),
    bic = c(stats::BIC(m0), stats::BIC(m1)),
    loglik = loglik,
    deviance = -2 * loglik,
    chisq = c(NA_real_, chisq),
    df = c(NA_real_, df),
    p_value = c(NA_real_, stats::pchisq(chisq, df, lower.tail = FALSE)),
    stringsAsFactors = FALSE
  )
  list(table = tab, f_value = f[["F"]][2], p_value_f = f[["Pr(>F)"]][2],
       sigma = c(stats::sigma(m0), stats::sigma(m1)), nobs = stats::nobs(m1))
}

# Parametric-bootstrap refits of a variance-component model: what lme4's
# bootMer(m, function(x) as.data.frame(VarCorr(x))$vcov, nsim, use.u = FALSE, type = "parametric")
# computes per replicate, for responses simulated beforehand (simulate(m, nsim, seed, re.form = NA),
# one column of `ysim` per replicate): lme4::refit(m, newresp = ysim[, i]) (same estimator, REML
# or ML; the optimizer starts at the fitted theta; lmerControl() defaults, as bootMer passes
# the call's control, NULL for a default lmer call) and as.data.frame(VarCorr(refit))$vcov.
# A replicate whose refit fails gets NA variances and its error message; a refit that raises
# warnings is kept (bootMer keeps it too) and its warnings are returned; messages (lme4's
# "boundary (singular) fit") are muffled and the singular status is returned instead.
me_vca_refit <- function(m, ysim) {
  ysim <- as.matrix(ysim)
  nb <- ncol(ysim)
  groups <- as.data.frame(lme4::VarCorr(m))$grp
  vcov <- matrix(NA_real_, nrow = nb, ncol = length(groups))
  singular <- rep(NA_real_, nb)
  failed <- rep(FALSE, nb)
  warned <- rep(FALSE, nb)
  problem <- rep("", nb)
  for (i in seq_len(nb)) {
    step <- me_collect(function() lme4::refit(m, newresp = ysim[, i]))
    notes <- step$warnings
    r <- step$value
    if (!is.null(step$error)) {
      failed[i] <- TRUE
      problem[i] <- step$error
      next
    }
    vcov[i, ] <- as.data.frame(lme4::VarCorr(r))$vcov
    singular[i] <- as.numeric(lme4::isSingular(r, tol = 1e-4))
    warned[i] <- length(notes) > 0L
    problem[i] <- paste(unique(notes), collapse = "; ")
  }
  list(vcov = vcov, groups = groups, singular = singular, failed = failed, warned = warned, problem = problem)
}
