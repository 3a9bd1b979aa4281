# Item response theory as a crossed GLMM (De Boeck et al. 2011, J. Stat. Softw. 39(12)).
#
# `data` holds one row per (system, item) with `y` (number correct), `n` (number of trials),
# factors `system` and `item` (levels set by mixedeval), and, when asked, item covariates named
# c1 .. cp (numeric, built by mixedeval from the user's item features) and a factor `grp` (the
# DIF grouping). Column names are mixedeval's own, never user strings; every formula below is a
# fixed string built from them. With one trial per row (`binary = TRUE`) the response is `y`
# (0/1), so the call is literally glmer(y ~ 1 + (1 | item) + (1 | system), binomial); otherwise
# cbind(y, n - y).

me_irt_response <- function(binary) if (isTRUE(binary)) "y" else "cbind(y, n - y)"

me_irt_control <- function() {
  lme4::glmerControl(check.conv.singular = lme4::.makeCC(action = "ignore", tol = 1e-4))
}

me_irt_rasch_formula <- function(binary, fixed_items = FALSE, covariates = character(0), grp = FALSE,
                                 dif_item = NULL) {
  lhs <- me_irt_response(binary)
  fx <- if (isTRUE(fixed_items)) "0 + item" else "1"
  fx <- c(fx, covariates, if (isTRUE(grp)) "grp", dif_item)
  re <- c(if (!isTRUE(fixed_items)) "(1 | item)", "(1 | system)")
  stats::as.formula(paste(lhs, "~", paste(c(fx, re), collapse = " + ")))
}

me_irt_conv <- function(m) {
  msgs <- c(m@optinfo$conv$lme4$messages, m@optinfo$warnings)
  if (is.null(msgs)) character(0) else vapply(msgs, function(x) paste(as.character(x), collapse = " "), "")
}

# The conditional modes of one grouping factor with their conditional SDs (ranef(condVar = TRUE)).
me_irt_modes <- function(m, group, all = lme4::ranef(m, condVar = TRUE)) {
  re <- all[[group]]
  data.frame(level = rownames(re), mode = re[, 1], cond_sd = sqrt(as.numeric(attr(re, "postVar"))),
             stringsAsFactors = FALSE)
}

me_irt_fixed <- function(m, v = as.matrix(stats::vcov(m))) {
  data.frame(term = names(lme4::fixef(m)), estimate = unname(lme4::fixef(m)), std_error = sqrt(diag(v)),
             stringsAsFactors = FALSE)
}

# Rasch: glmer(y ~ 1 [+ covariates] + (1 | item) + (1 | system), binomial), or with fixed items
# glmer(y ~ 0 + item + (1 | system), binomial). Returns the fixed effects (with their covariance),
# the conditional modes of items and systems, the SDs of the random effects, logLik and checks.
me_irt_rasch <- function(data, binary = TRUE, fixed_items = FALSE, covariates = character(0), nagq = 1L) {
  f <- me_irt_rasch_formula(binary, fixed_items, covariates)
  ctrl <- me_irt_control()
  nAGQ <- as.integer(nagq)
  m <- lme4::glmer(f, data = data, family = stats::binomial(), nAGQ = nAGQ, control = ctrl)
  vc <- lme4::VarCorr(m)
  re <- lme4::ranef(m, condVar = TRUE)  # once for both grouping factors (it is the slow part after the fit)
  v <- as.matrix(stats::vcov(m))
  list(fixed = me_irt_fixed(m, v), vcov = as.data.frame(unname(v)),
       systems = me_irt_modes(m, "system", re),
       items = if (isTRUE(fixed_items)) NULL else me_irt_modes(m, "item", re),
       system_sd = unname(attr(vc$system, "stddev")),
       item_sd = if (isTRUE(fixed_items)) NA_real_ else unname(attr(vc$item, "stddev")),
       loglik = as.numeric(stats::logLik(m)), df_loglik = as.integer(attr(stats::logLik(m), "df")),
       nobs = as.integer(stats::nobs(m)), singular = lme4::isSingular(m, tol = 1e-4),
       convergence = me_irt_conv(m), formula = paste(deparse(f, width.cutoff = 500L), collapse = " "))
}

# 2PL: glmmTMB(y ~ 0 + item + rr(0 + item | system, d = 1), binomial). The reduced-rank term is
# b[s, i] = lambda_i z_s with z_s ~ N(0, 1): glmmTMB stores the loadings lambda as the `theta`
# parameters (first column of the lower-triangular loading matrix, unconstrained) and, per system,
# a block of `nlevels(item)` latent values of which the first is z_s (the others are unused).
# Returned: intercepts beta_i and loadings lambda_i with standard errors and their covariance (from
# sdreport's cov.fixed), z_s with its conditional SD (sdreport's diag.cov.random), logLik, checks.
me_irt_2pl <- function(data, binary = TRUE) {
  f <- stats::as.formula(paste(me_irt_response(binary), "~ 0 + item + rr(0 + item | system, d = 1)"))
  fam <- stats::binomial()
  m <- glmmTMB::glmmTMB(f, data = data, family = fam)
  ni <- nlevels(data$item)
  # the parameters at the optimum: parList() without arguments returns the *last evaluated* point,
  # which after the fit (glmmTMB's Hessian by finite differences) is off by up to 1e-3 in a loading
  pl <- m$obj$env$parList(m$fit$par, m$obj$env$last.par.best)
  cf <- m$sdr$cov.fixed
  ib <- which(rownames(cf) == "beta")
  it <- which(rownames(cf) == "theta")
  bcond <- matrix(pl$b, nrow = ni)
  vcond <- if (is.null(m$sdr$diag.cov.random)) rep(NA_real_, length(pl$b)) else m$sdr$diag.cov.random
  vcond <- matrix(vcond, nrow = ni)
  items <- data.frame(item = levels(data$item), beta = unname(pl$beta), lambda = unname(pl$theta),
                      se_beta = sqrt(diag(cf)[ib]), se_lambda = sqrt(diag(cf)[it]),
                      cov_beta_lambda = cf[cbind(ib, it)], stringsAsFactors = FALSE)
  systems <- data.frame(level = levels(data$system), mode = bcond[1, ], cond_sd = sqrt(vcond[1, ]),
                        stringsAsFactors = FALSE)
  msgs <- character(0)
  if (!isTRUE(m$fit$convergence == 0)) msgs <- c(msgs, paste("glmmTMB optimizer:", m$fit$message))
  if (!isTRUE(m$sdr$pdHess)) msgs <- c(msgs, "non-positive-definite Hessian matrix (glmmTMB sdr$pdHess is FALSE)")
  list(items = items, systems = systems, loglik = as.numeric(stats::logLik(m)),
       df_loglik = as.integer(attr(stats::logLik(m), "df")), nobs = as.integer(stats::nobs(m)),
       convergence = msgs, formula = paste(deparse(f, width.cutoff = 500L), collapse = " "))
}

# Differential item functioning of a Rasch model (uniform DIF, item x group): the base model
# glmer(y ~ 1 + grp + (1 | item) + (1 | system), binomial) against, for each item j in turn, the
# same model plus that item's own group effect (the columns of the item x group interaction for
# item j: grp's treatment-contrast columns times the indicator of item j), fitted from the base
# model's estimates (start values) -- a likelihood-ratio test with nlevels(grp) - 1 df per item, the
# other items acting as anchors (the IRT-LR procedure, Thissen, Steinberg & Wainer 1988). The
# global test: base + (1 | item:grp) (DIF variance) against the base, an LRT on the boundary
# (50:50 mixture of chi-square 0 and 1 df).
me_irt_dif_columns <- function(data, item) {
  G <- stats::model.matrix(~ grp, data = data)[, -1L, drop = FALSE]
  ind <- as.numeric(data$item == item)
  out <- G * ind
  colnames(out) <- paste0("d", seq_len(ncol(out)))
  out
}

me_irt_dif_one <- function(data, m0, binary, item) {
  D <- me_irt_dif_columns(data, item)
  for (k in colnames(D)) data[[k]] <- D[, k]
  f <- me_irt_rasch_formula(binary, FALSE, character(0), TRUE, colnames(D))
  st <- list(theta = lme4::getME(m0, "theta"), fixef = c(lme4::fixef(m0), stats::setNames(rep(0, ncol(D)), colnames(D))))
  ctrl <- me_irt_control()
  m1 <- lme4::glmer(f, data = data, family = stats::binomial(), control = ctrl, start = st)
  chisq <- max(0, 2 * (as.numeric(stats::logLik(m1)) - as.numeric(stats::logLik(m0))))
  est <- lme4::fixef(m1)[colnames(D)]
  se <- sqrt(diag(as.matrix(stats::vcov(m1))))[colnames(D)]
  data.frame(item = item, chisq = chisq, df = ncol(D), p_value = stats::pchisq(chisq, ncol(D), lower.tail = FALSE),
             estimate = if (ncol(D) == 1L) unname(est) else NA_real_,
             std_error = if (ncol(D) == 1L) unname(se) else NA_real_, stringsAsFactors = FALSE)
}

# The base fit and the global test; `state` (an environment: data, base model, binary) is what
# me_irt_dif_item takes, one item per call (so that Python can show progress).
me_irt_dif_base <- function(data, binary = TRUE) {
  ctrl <- me_irt_control()
  f0 <- me_irt_rasch_formula(binary, FALSE, character(0), TRUE)
  m0 <- lme4::glmer(f0, data = data, family = stats::binomial(), control = ctrl)
  fg <- stats::update(f0, . ~ . + (1 | item:grp))
  mg <- lme4::glmer(fg, data = data, family = stats::binomial(), control = ctrl)
  chisq <- max(0, 2 * (as.numeric(stats::logLik(mg)) - as.numeric(stats::logLik(m0))))
  state <- new.env(parent = emptyenv())
  state$data <- data
  state$m0 <- m0
  state$binary <- binary
  list(state = state, global_chisq = chisq, global_p_value = 0.5 * stats::pchisq(chisq, 1, lower.tail = FALSE),
       dif_sd = unname(attr(lme4::VarCorr(mg)[["item:grp"]], "stddev")),
       loglik0 = as.numeric(stats::logLik(m0)), loglik1 = as.numeric(stats::logLik(mg)))
}

me_irt_dif_item <- function(state, item) me_irt_dif_one(state$data, state$m0, state$binary, item)

# Rasch by conditional maximum likelihood (eRm::RM) on a 0/1 systems x items matrix (NA allowed):
# item difficulties (eRm's beta is easiness: difficulty = -beta) with standard errors, sum-zero
# normalised. Used to cross-check the GLMM Rasch fit (tests, benchmarks); needs r-cran-erm.
me_irt_erm <- function(x) {
  fit <- eRm::RM(as.matrix(x), sum0 = TRUE)
  list(difficulty = -unname(fit$betapar), std_error = unname(fit$se.beta), loglik = as.numeric(fit$loglik))
}
