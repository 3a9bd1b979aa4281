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
