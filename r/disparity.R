# Parametric-bootstrap refits for mixedeval's language_disparity workflow.
#
# me_disparity_refit_fixef(m, ysim): refit the ML model `m` to each column of `ysim` (responses
# simulated from `m`, e.g. by lme4::simulate) with lme4::refit(m, newresp = ...), which reuses the
# model structure and starts the optimizer at the fitted theta, and return per replicate the fixed
# effects (a replicate x coefficient matrix), the two standard deviations, and the singular /
# convergence status (a singular fit is reported as singular, not as a convergence failure). A
# replicate whose refit fails gets NA coefficients and its error message; warnings raised by a
# refit are kept per replicate (they do not abort the loop).

me_disparity_refit_fixef <- function(m, ysim) {
  ysim <- as.matrix(ysim)
  nb <- ncol(ysim)
  terms <- names(lme4::fixef(m))
  beta <- matrix(NA_real_, nrow = nb, ncol = length(terms))
  sd_group <- rep(NA_real_, nb)
  sigma <- rep(NA_real_, nb)
  singular <- rep(NA, nb)
  converged <- rep(NA, nb)
  problem <- rep("", nb)
  for (i in seq_len(nb)) {
    step <- me_collect(function() lme4::refit(m, newresp = ysim[, i]))
    notes <- step$warnings
    r <- step$value
    if (!is.null(step$error)) {
      problem[i] <- paste("error:", step$error)
      next
    }
    beta[i, ] <- unname(lme4::fixef(r))
    vc <- as.data.frame(lme4::VarCorr(r))
    sd_group[i] <- vc$sdcor[1]
    sigma[i] <- stats::sigma(r)
    singular[i] <- lme4::isSingular(r, tol = 1e-4)
    conv <- me_convergence(r)
    msgs <- c(conv$messages[!grepl("singular", conv$messages, fixed = TRUE)], notes)
    converged[i] <- isTRUE(conv$optimizer_code == 0L) && length(msgs) == 0L
    problem[i] <- paste(msgs, collapse = "; ")
  }
  list(beta = beta, terms = terms, sd_group = sd_group, sigma = sigma,
       singular = singular, converged = converged, problem = problem)
}

# Language-potential intervals: LP_l = L[l, ] %*% fixef(m) for the contrast matrix L (one row
# per language), with standard error, denominator df and t interval from ONE call of
# lmerTest::contest(m, L, joint = FALSE, confint = TRUE, level, ddf) (Satterthwaite, or
# Kenward-Roger via pbkrtest for REML fits). Returns plain vectors in the rows' order.
me_disparity_contest <- function(m, L, ddf = "Satterthwaite", level = 0.95) {
  L <- matrix(as.numeric(L), nrow = NROW(L), ncol = length(lme4::fixef(m)))
  ct <- lmerTest::contest(m, L, ddf = ddf, joint = FALSE, confint = TRUE, level = level)
  list(estimate = unname(ct[["Estimate"]]), std_error = unname(ct[["Std. Error"]]),
       df = unname(ct[["df"]]), conf_low = unname(ct[["lower"]]), conf_high = unname(ct[["upper"]]))
}
