# Variance components for R-squared and ICC of binomial, Poisson and negative binomial GLMMs
# (lme4::glmer / glmer.nb), as MuMIn's r.squaredGLMM.merMod computes them (Nakagawa, Johnson &
# Schielzeth 2017, J. R. Soc. Interface 14:20170213). This helper returns the components; the
# observation-level variances of each method and the ratios are computed in Python
# (mixedeval/inference/_r2_glmm.py).
#
# * var_fixed: var(X beta) (R's var, denominator n - 1);
# * var_random: sum over the VarCorr matrices Sigma_k of mean_i(z_ik' Sigma_k z_ik), z_ik the
#   rows of the random-effect model matrix (model.matrix(m, type = "randomListRaw"), columns
#   de-duplicated by name as MuMIn's .remodmat does); for random intercepts the variances;
# * the null model: the same call with the fixed part replaced by 1 and the random-effect terms
#   kept (MuMIn's .nullREForm), evaluated where the model was fitted (lme4's update does the
#   same) on the rows the model used (MuMIn would refit on every row with a complete response
#   and grouping factors); null_intercept is its fixef and var_random_null the same sum with
#   the null model's VarCorr and the full model's random-effect model matrix (MuMIn's vt);
# * n_trials: the mean number of binomial trials (MuMIn's .binomial.sample.size: mean prior
#   weight, or mean row sum of a cbind response);
# * theta: the negative binomial shape (getME(m, "glmer.nb.theta")).

me_r2_glmm_re_matrix <- function(m) {
  mm <- do.call(cbind, stats::model.matrix(m, type = "randomListRaw"))
  mm[, !duplicated(colnames(mm)), drop = FALSE]
}

me_r2_glmm_re_sum <- function(vc, mm) {
  n <- nrow(mm)
  parts <- vapply(vc, function(S) {
    S <- unclass(S)
    Z <- mm[, rownames(S), drop = FALSE]
    sum((Z %*% S) * Z) / n
  }, 0)
  list(total = sum(parts), parts = unname(parts))
}

me_r2_glmm_null <- function(m) {
  f <- stats::formula(m)
  re <- lapply(lme4::findbars(f), function(x) call("(", x))
  rhs <- 1
  for (b in re) rhs <- call("+", rhs, b)
  f[[length(f)]] <- rhs
  cl <- stats::getCall(m)
  cl$formula <- f
  env <- environment(stats::formula(m))
  # the rows the model used: rows dropped for missing values of variables the null model does
  # not have (fixed-effect covariates) are dropped from the null model too
  dropped <- attr(stats::model.frame(m), "na.action")
  if (length(dropped)) {
    keep <- rep(TRUE, nrow(eval(cl$data, env)))
    keep[as.integer(dropped)] <- FALSE
    cl$subset <- keep
  }
  # the model's call refers to objects of the frame it was fitted in (data, family, control)
  eval(cl, envir = env)
}

me_r2_glmm_parts <- function(m) {
  fam <- stats::family(m)
  family <- fam$family
  is_nb <- startsWith(family, "Negative Binomial(")
  X <- lme4::getME(m, "X")
  fe <- lme4::fixef(m)
  ok <- !is.na(fe)
  var_fixed <- stats::var(drop(X[, ok, drop = FALSE] %*% fe[ok]))
  mm <- me_r2_glmm_re_matrix(m)
  vc <- lme4::VarCorr(m)
  re <- me_r2_glmm_re_sum(vc, mm)
  null <- me_r2_glmm_null(m)
  re_null <- me_r2_glmm_re_sum(lme4::VarCorr(null), mm)
  y <- stats::model.response(stats::model.frame(m))
  n_trials <- if (is.null(dim(y))) mean(stats::weights(m, type = "prior")) else mean(rowSums(y))
  list(
    family = if (is_nb) "negative_binomial" else family,
    link = fam$link,
    var_fixed = var_fixed,
    var_random = re$total,
    groups = names(vc),
    terms = vapply(vc, function(S) paste(rownames(S), collapse = ", "), ""),
    var_terms = re$parts,
    null_intercept = unname(lme4::fixef(null)[1L]),
    var_random_null = re_null$total,
    null_singular = lme4::isSingular(null, tol = 1e-4),
    n_trials = n_trials,
    theta = if (is_nb) unname(lme4::getME(m, "glmer.nb.theta")) else NA_real_
  )
}
