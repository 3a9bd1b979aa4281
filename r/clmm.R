# Cumulative link mixed models for ordered ratings with ordinal::clmm (Christensen 2022).
#
# The response arrives as integer codes 1..K with its K levels in order (the Python side
# validates it), and becomes an ordered factor here. The tables keep R's labels (renamed in
# Python by mixedeval/engine/names.py CLMM_COEFFICIENTS).

# summary(m)$coefficients rows named `rows` with the Wald interval estimate -+ qnorm(1 - (1 -
# level) / 2) * SE (as confint(m), which is Wald for clmm) as lower / upper.
me_clmm_coef_rows <- function(m, rows, level) {
  cf <- stats::coef(summary(m))
  cf <- cf[rows, , drop = FALSE]
  q <- stats::qnorm(1 - (1 - level) / 2)
  tab <- data.frame(term = rows, Estimate = unname(cf[, 1]), SE = unname(cf[, 2]), z = unname(cf[, 3]),
                    p = unname(cf[, 4]), stringsAsFactors = FALSE)
  names(tab) <- c("term", "Estimate", "Std. Error", "z value", "Pr(>|z|)")
  tab$lower <- tab[["Estimate"]] - q * tab[["Std. Error"]]
  tab$upper <- tab[["Estimate"]] + q * tab[["Std. Error"]]
  tab
}

# ordinal::VarCorr(m) laid out as lme4's as.data.frame(VarCorr(m), order = "lower.tri"): per
# grouping factor the lower triangle of its covariance matrix column by column (a variance row,
# then its covariances), labels grp, var1, var2, vcov, sdcor. No residual row: the latent
# residual variance of a cumulative link model is fixed by the link.
me_clmm_random_table <- function(m) {
  vc <- ordinal::VarCorr(m)
  rows <- list()
  for (g in names(vc)) {
    S <- vc[[g]]
    nm <- rownames(S)
    sd <- sqrt(diag(S))
    for (j in seq_along(nm)) {
      for (i in j:length(nm)) {
        if (i == j) {
          rows[[length(rows) + 1L]] <- data.frame(grp = g, var1 = nm[j], var2 = NA_character_,
                                                  vcov = S[j, j], sdcor = sd[j], stringsAsFactors = FALSE)
        } else {
          rows[[length(rows) + 1L]] <- data.frame(grp = g, var1 = nm[j], var2 = nm[i], vcov = S[i, j],
                                                  sdcor = S[i, j] / (sd[i] * sd[j]), stringsAsFactors = FALSE)
        }
      }
    }
  }
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}

# Optimizer status: nlminb's code and message, the largest absolute gradient (summary's
# max.grad) and the condition number of the Hessian (summary's cond.H; NA when it is not
# positive definite).
me_clmm_convergence <- function(m) {
  ev <- tryCatch(eigen(m$Hessian, symmetric = TRUE, only.values = TRUE)$values, error = function(e) NA_real_)
  cond <- if (all(is.finite(ev)) && min(ev) > 0) max(ev) / min(ev) else NA_real_
  list(code = as.integer(m$optRes$convergence), message = as.character(m$optRes$message),
       max_grad = max(abs(m$gradient)), cond_h = cond)
}

me_clmm_summary <- function(m, level) {
  alpha <- names(m$alpha)
  beta <- names(m$beta)
  ll <- stats::logLik(m)
  list(
    fixed = if (length(beta)) me_clmm_coef_rows(m, beta, level) else NULL,
    thresholds = me_clmm_coef_rows(m, alpha, level),
    random = me_clmm_random_table(m),
    st_diag = unname(unlist(lapply(m$ST, diag))),
    loglik = as.numeric(ll),
    npar = as.integer(attr(ll, "df")),
    aic = stats::AIC(m),
    bic = stats::BIC(m),
    nobs = as.integer(m$dims$nobs),
    ngroups_names = names(m$dims$nlev.gf),
    ngroups = as.integer(m$dims$nlev.gf),
    convergence = me_clmm_convergence(m),
    ordinal_version = as.character(utils::packageVersion("ordinal"))
  )
}

# A clmm fit is an S3 list, which the Python side would convert element by element: it travels
# inside an environment (kept as a handle) and is unboxed by the helpers that take it.
me_clmm_box <- function(m) {
  box <- new.env(parent = emptyenv())
  box$m <- m
  box
}

# Fit rating ~ ... + (1|g) by ordinal::clmm. `response` names the response column, holding
# integer codes 1..K of `response_levels`; it becomes an ordered factor with those levels.
me_clmm_fit <- function(formula, data, response, response_levels, link = "logit", threshold = "flexible",
                        nagq = 1L, level = 0.95) {
  data[[response]] <- factor(response_levels[data[[response]]], levels = response_levels, ordered = TRUE)
  f <- stats::as.formula(formula)
  m <- ordinal::clmm(f, data = data, link = link, threshold = threshold, nAGQ = as.integer(nagq))
  c(list(model = me_clmm_box(m)), me_clmm_summary(m, level))
}

# Likelihood-ratio tests between nested clmm fits, as ordinal's anova(m0, m1, ...) computes them:
# models ordered by their number of parameters, LR.stat = 2 * (logLik_k - logLik_(k-1)),
# df the difference in parameters, p = pchisq(LR.stat, df, lower.tail = FALSE). Computed here
# rather than by calling anova() through do.call, which would deparse whole model objects for
# its labels. Labels as ordinal prints them (no.par, AIC, logLik, LR.stat, df, Pr(>Chisq)).
me_clmm_compare <- function(models, model_names) {
  models <- lapply(models, function(box) box$m)
  ll <- lapply(models, stats::logLik)
  npar <- vapply(ll, function(x) as.integer(attr(x, "df")), 0L)
  nobs <- vapply(models, function(m) as.integer(m$dims$nobs), 0L)
  if (length(unique(nobs)) != 1L) stop("models were not all fitted to the same number of observations")
  o <- order(npar)
  ll <- vapply(ll, as.numeric, 0)[o]
  npar <- npar[o]
  lr <- c(NA, 2 * diff(ll))
  df <- c(NA, diff(npar))
  p <- ifelse(is.na(df) | df <= 0, NA_real_, stats::pchisq(lr, df, lower.tail = FALSE))
  data.frame(model = model_names[o], no.par = npar, AIC = vapply(models, stats::AIC, 0)[o],
             BIC = vapply(models, stats::BIC, 0)[o], logLik = ll, LR.stat = lr, df = df, `Pr(>Chisq)` = p,
             stringsAsFactors = FALSE, check.names = FALSE)
}

# Estimated marginal means of a clmm fit (emmeans' ordinal support): `mode` is "latent" (the
# latent variable, thresholds averaged to zero), "prob" (the probability of each response
# category; the response pseudo-factor becomes the first `by` variable, so contrasts compare
# the cells category by category) or "mean.class" (the expected category number 1..K). Summary
# as me_emm_summary (asymptotic intervals: df = Inf).
me_clmm_emmeans <- function(m, specs, by = NULL, at = NULL, mode = "latent", level = 0.95) {
  m <- m$m
  if (mode == "prob") {
    lv <- names(emmeans::ref_grid(m, mode = mode, at = at)@levels)
    pseudo <- setdiff(lv, names(emmeans::ref_grid(m, mode = "latent", at = at)@levels))
    by <- c(pseudo, by)  # the response pseudo-factor (named after the response)
  }
  grid <- emmeans::emmeans(m, specs = specs, by = by, at = at, mode = mode)
  c(list(grid = grid), me_emm_summary(grid, infer = c(TRUE, FALSE), level = level))
}
