# Separation in binomial GLMMs (lme4::glmer fits) and the weakly penalised refit
# (blme::bglmer) that gives finite estimates under it.
#
# Separation: some linear combination of the fixed-effect columns predicts the outcome perfectly
# for some rows (quasi-complete) or all rows (complete separation; Albert & Anderson 1984,
# Biometrika 71:1). The maximum-likelihood estimate of the fixed effects is then infinite; glmer
# stops at a large finite value with a huge standard error, so the Wald z (and Type III Wald
# chi-square) tests are near p = 1 while the likelihood-ratio test is tiny (the Hauck-Donner
# effect; Hauck & Donner 1977, JASA 72:851). Separation of the fixed part (X alone) carries over
# to the GLMM: along such a direction the conditional likelihood of every random-effect value
# increases, hence the marginal likelihood too; the random-effect part (an item always solved)
# is held finite by the random-effect distribution.
#
# me_glmm_separation returns what decides it, all computed from the fit:
#   * the cells of the fixed part's factors (the interaction of every factor / character /
#     logical column of the fixed part, from the model frame) with their trials and successes;
#   * the linear program of Konis (2007, "Linear programming algorithms for detecting separated
#     data in binary logistic regression models", DPhil thesis, Oxford), the method behind
#     brglm2's detect_separation (moved to the detectseparation package in brglm2 0.8.0 and
#     defunct in Debian's brglm2 0.9, hence not called here): each row i with successes
#     contributes -x_i, each row with failures +x_i (xbar); the distinct rows of xbar are
#     returned, and the Python side solves the program with scipy's HiGHS.
#
# me_bglmer_fit refits the model with blme::bglmer (Chung, Rabe-Hesketh, Dorie, Gelman & Liu
# 2013, Psychometrika 78:685; Dorie's blme) with blme's default weakly informative normal prior
# on the fixed effects -- sd 10 for the intercept, 2.5 for every other coefficient (Gelman,
# Jakulin, Pittau & Su 2008, Ann. Appl. Stat. 2:1360, whose scales blme's default takes) -- and
# no covariance prior (cov.prior = NULL: only the fixed part is penalised; the random part is
# estimated as in the ML fit). As in r/glmm.R, the stored call refers to the data by the name
# `data` and to family / control / prior by local names or literal numbers, never inlined data.

# The fixed-part columns of `m` that define cells (factor, character or logical columns of the
# model frame named in the fixed part).
me_separation_factors <- function(m, mf) {
  fx <- lme4::nobars(stats::formula(m))
  vars <- all.vars(fx[[length(fx)]])
  vars[vapply(vars, function(v) v %in% names(mf) &&
    (is.factor(mf[[v]]) || is.character(mf[[v]]) || is.logical(mf[[v]])), logical(1))]
}

me_glmm_separation <- function(m) {
  m <- me_glmm_model(m)
  if (me_is_tmb(m) || !methods::is(m, "glmerMod") || stats::family(m)$family != "binomial") {
    stop("separation is checked for binomial lme4::glmer fits only")
  }
  X <- as.matrix(lme4::getME(m, "X"))
  w <- as.numeric(m@resp$weights)   # prior weights: the number of trials (1 for 0/1 responses)
  y <- as.numeric(m@resp$y)         # proportion of successes
  succ <- y * w
  fail <- (1 - y) * w
  mf <- stats::model.frame(m)
  facs <- me_separation_factors(m, mf)
  key <- if (length(facs)) interaction(mf[facs], drop = TRUE, lex.order = TRUE) else factor(rep("(all)", nrow(mf)))
  first <- match(levels(key), key)
  cells <- if (length(facs)) {
    as.data.frame(lapply(mf[first, facs, drop = FALSE], as.character), stringsAsFactors = FALSE,
                  col.names = facs, optional = TRUE)
  } else data.frame(row.names = seq_along(first))
  n <- as.numeric(tapply(w, key, sum))
  s <- as.numeric(tapply(succ, key, sum))
  # the pieces of the linear program: one per row with successes (outcome 1), one per row with failures
  has1 <- which(succ > 0)
  has0 <- which(fail > 0)
  piece_row <- c(has1, has0)
  piece_outcome <- c(rep(1L, length(has1)), rep(0L, length(has0)))
  xbar <- rbind(-X[has1, , drop = FALSE], X[has0, , drop = FALSE])
  rkey <- do.call(paste, c(lapply(seq_len(ncol(xbar)), function(j) sprintf("%a", xbar[, j])), sep = "|"))
  ukey <- unique(rkey)
  list(factors = facs, cells = cells, n = n, successes = s,
       coef_names = colnames(X), xbar = unname(xbar[match(ukey, rkey), , drop = FALSE]),
       piece_unique = match(rkey, ukey), piece_cell = as.integer(key)[piece_row],
       piece_outcome = piece_outcome, response = deparse(stats::formula(m)[[2]]))
}

# blme::bglmer with blme's default normal fixed-effect prior and no covariance prior, summarised
# as me_glmm_summary (logLik is the likelihood alone at the posterior mode, without the prior).
# The prior is an expression blme evaluates where `p` is the number of fixed effects (documented
# in ?bmerDist-class), so refits of the stored call with another fixed part (the R² null model)
# get the same rule: with an intercept the variances c(intercept_sd^2, slope_sd^2, ...) -- blme's
# default normal(sd = c(10, 2.5)): the first for the intercept, the last repeated -- without one
# slope_sd^2 for every coefficient (blme would give the first the intercept's sd). It is given as
# `cov` of length p: blme 1.0-5's normal() fails for p = 1 when given `sd` (diag() of a 1 x 1
# matrix) and warns when `sd` is longer than p. `prior_sd` / `prior_terms`: the
# SDs blme applied (from the fit's prior, 1 / diag(R.cov.inv)) by coefficient. `optimizer` as
# me_glmm_control (NULL: lme4's default). The standard errors are R's summary(m): the
# finite-difference Hessian of the penalised deviance, prior included (it matches
# numDeriv::hessian of the glmer deviance function plus sum(beta^2 / sd^2)). me_glmm_vcov_check's
# rule is not applied: its RX-based alternative is not that curvature and differs from it by
# design (25% on a separated fit).
me_bglmer_fit <- function(formula, data, link = NULL, nagq = 1L, optimizer = NULL, weights = NULL,
                          level = 0.95, calc_derivs = TRUE, intercept_sd = 10, slope_sd = 2.5) {
  f <- stats::as.formula(formula)
  nAGQ <- as.integer(nagq)
  ctrl <- me_glmm_control(optimizer, calc_derivs)
  fam <- me_glmm_family("binomial", link)
  w_arg <- NULL
  if (!is.null(weights)) {
    wname <- me_weights_name(data)
    data[[wname]] <- as.numeric(weights)
    w_arg <- as.name(wname)
  }
  isd <- as.numeric(intercept_sd)
  ssd <- as.numeric(slope_sd)
  prior <- if (attr(stats::terms(lme4::nobars(f)), "intercept") == 1L) {
    bquote(normal(cov = c(.(isd^2), rep(.(ssd^2), p - 1L))))
  } else bquote(normal(cov = rep(.(ssd^2), p)))
  cl <- bquote(blme::bglmer(f, data = data, family = fam, nAGQ = nAGQ, control = ctrl, weights = .(w_arg),
                            cov.prior = NULL, fixef.prior = .(prior)))
  if (is.null(w_arg)) cl$weights <- NULL
  m <- eval(cl)
  sds <- 1 / diag(as.matrix(m@priors$fixefPrior@R.cov.inv))
  c(list(model = m), me_glmm_summary(m, "binomial", level),
    list(prior_sd = as.numeric(sds), prior_terms = names(lme4::fixef(m))))
}
